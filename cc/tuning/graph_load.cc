#include "cc/tuning/graph_load.h"

#include <algorithm>

namespace graphi {

bool GraphLoad::BeginTopLevelStep(uint64_t* epoch, int* in_flight) {
  const int before = top_level_in_flight_.fetch_add(1, std::memory_order_acq_rel);
  *in_flight = before + 1;
  const bool overlapping = before > 0;
  if (overlapping) overlap_epoch_.fetch_add(1, std::memory_order_acq_rel);
  *epoch = overlap_epoch_.load(std::memory_order_acquire);
  return overlapping;
}

bool GraphLoad::EndTopLevelStep(uint64_t epoch, int* in_flight) {
  *in_flight = top_level_in_flight_.fetch_sub(1, std::memory_order_acq_rel);
  return overlap_epoch_.load(std::memory_order_acquire) != epoch;
}

int GraphLoad::StepInFlight(int at_begin, int at_end, bool overlapped) {
  return std::max({at_begin, at_end, overlapped ? 2 : 1});
}

TopLevelStepEnd GraphLoad::NoteTopLevelStepEnd(int in_flight) {
  MutexLock l(&mu_);
  TopLevelStepEnd out;
  out.load_class_changed = tracker_.Note(in_flight);
  out.load_class = tracker_.current();
  for (int c = 0; c < kLoadClassCount; ++c) {
    out.adopted[c] = adoptions_.For(static_cast<LoadClass>(c)) != nullptr;
  }
  return out;
}

LoadClass GraphLoad::load_class() const {
  MutexLock l(&mu_);
  return tracker_.current();
}

void GraphLoad::Adopt(const Adoption& adoption) {
  MutexLock l(&mu_);
  adoptions_.Set(adoption);
}

void GraphLoad::ClearAdoptions() {
  MutexLock l(&mu_);
  adoptions_ = AdoptionSlots();
}

bool GraphLoad::InForce(Adoption* out) const {
  MutexLock l(&mu_);
  const Adoption* in_force = adoptions_.InForce(tracker_.current());
  if (in_force == nullptr) return false;
  *out = *in_force;
  return true;
}

}  // namespace graphi
