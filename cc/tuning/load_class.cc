#include "cc/tuning/load_class.h"

#include "cc/util/check.h"

namespace graphi {

const char* LoadClassName(LoadClass load_class) {
  return load_class == LoadClass::kUnderLoad ? "under_load" : "alone";
}

bool ParseLoadClass(const std::string& name, LoadClass* out) {
  if (name == "alone") {
    *out = LoadClass::kAlone;
  } else if (name == "under_load") {
    *out = LoadClass::kUnderLoad;
  } else {
    return false;
  }
  return true;
}

LoadClassTracker::LoadClassTracker(int steps_to_switch) : steps_to_switch_(steps_to_switch) {
  GRAPHI_DCHECK(steps_to_switch >= 1);
}

bool LoadClassTracker::Note(bool overlapped) {
  const LoadClass seen = overlapped ? LoadClass::kUnderLoad : LoadClass::kAlone;
  if (seen == current_) {
    other_run_ = 0;
    return false;
  }
  if (++other_run_ < steps_to_switch_) return false;
  current_ = seen;
  other_run_ = 0;
  return true;
}

}  // namespace graphi
