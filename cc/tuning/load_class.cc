#include "cc/tuning/load_class.h"

#include <algorithm>

#include "cc/util/check.h"

namespace graphi {
namespace {

// The most steps in flight of each class under load but the last: the
// power of two times the square root of two, rounded down.
constexpr int kMostInFlight[] = {2, 5, 11, 22, 45};

constexpr const char* kNames[kLoadClassCount] = {
    "alone",          "under_load_2",  "under_load_4", "under_load_8",
    "under_load_16", "under_load_32", "under_load_64",
};

}  // namespace

LoadClass LoadClassOf(int in_flight) {
  if (in_flight <= 1) return LoadClass::kAlone;
  int c = 1;
  for (int most : kMostInFlight) {
    if (in_flight <= most) return static_cast<LoadClass>(c);
    ++c;
  }
  return LoadClass::kUnderLoad64;
}

int NominalInFlight(LoadClass load_class) { return 1 << static_cast<int>(load_class); }

const char* LoadClassName(LoadClass load_class) {
  const int c = static_cast<int>(load_class);
  GRAPHI_DCHECK(c >= 0 && c < kLoadClassCount);
  return kNames[c];
}

bool ParseLoadClass(const std::string& name, LoadClass* out) {
  for (int c = 0; c < kLoadClassCount; ++c) {
    if (name == kNames[c]) {
      *out = static_cast<LoadClass>(c);
      return true;
    }
  }
  return false;
}

std::string LoadClassNames() {
  std::string out;
  for (int c = 0; c < kLoadClassCount; ++c) {
    if (c > 0) out += ", ";
    out += kNames[c];
  }
  return out;
}

LoadClassTracker::LoadClassTracker(int steps_to_switch) : steps_to_switch_(steps_to_switch) {
  GRAPHI_DCHECK(steps_to_switch >= 1);
  other_run_.reserve(steps_to_switch);
}

bool LoadClassTracker::Note(int in_flight) {
  if (LoadClassOf(in_flight) == current_) {
    other_run_.clear();
    return false;
  }
  other_run_.push_back(in_flight);
  if (static_cast<int>(other_run_.size()) < steps_to_switch_) return false;
  // The run's median: clients ramping up or a step caught between requests
  // do not decide the level.
  std::nth_element(other_run_.begin(), other_run_.begin() + other_run_.size() / 2,
                   other_run_.end());
  const LoadClass next = LoadClassOf(other_run_[other_run_.size() / 2]);
  other_run_.clear();
  if (next == current_) return false;
  current_ = next;
  return true;
}

}  // namespace graphi
