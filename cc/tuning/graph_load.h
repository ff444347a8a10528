// GraphLoad: a graph's top-level steps in flight, the load class they put it
// in (load_class.h), and the settings adopted for it per class (adoption.h).
//
// The adoption in force for a graph is that of the class it is in now, else
// the nearest class's (AdoptionSlots::InForce): they live together because
// the class decides which adoption applies.
//
// Free of TensorFlow types. Thread-safety: thread-safe.
#ifndef GRAPHI_TF_CC_TUNING_GRAPH_LOAD_H_
#define GRAPHI_TF_CC_TUNING_GRAPH_LOAD_H_

#include <array>
#include <atomic>
#include <cstdint>

#include "cc/tuning/adoption.h"
#include "cc/tuning/load_class.h"
#include "cc/util/mutex.h"
#include "cc/util/thread_annotations.h"

namespace graphi {

// What the bookkeeping of a finished top-level step tells its executor.
struct TopLevelStepEnd {
  LoadClass load_class = LoadClass::kAlone;  // the graph's class, this step counted
  bool load_class_changed = false;           // ... which this step changed
  std::array<bool, kLoadClassCount> adopted{};  // whether each class has an adoption
};

class GraphLoad {
 public:
  // Top-level steps in flight: Begin returns whether another one was
  // running and fills *epoch and *in_flight (the steps in flight, this one
  // included); End returns whether another step started while this one ran
  // (so the two overlapped) and fills *in_flight (the steps in flight just
  // before it ended, this one included).
  bool BeginTopLevelStep(uint64_t* epoch, int* in_flight);
  bool EndTopLevelStep(uint64_t epoch, int* in_flight);
  // The steps in flight a finished step counts toward the load class: the
  // more of Begin's and End's figures, and 2 at least when it overlapped
  // (another step came and went while it ran).
  static int StepInFlight(int at_begin, int at_end, bool overlapped);
  // Counts a finished top-level step toward the load class (`in_flight`:
  // StepInFlight's answer).
  TopLevelStepEnd NoteTopLevelStepEnd(int in_flight) GRAPHI_LOCKS_EXCLUDED(mu_);
  LoadClass load_class() const GRAPHI_LOCKS_EXCLUDED(mu_);

  // Records `adoption` for its load class.
  void Adopt(const Adoption& adoption) GRAPHI_LOCKS_EXCLUDED(mu_);
  void ClearAdoptions() GRAPHI_LOCKS_EXCLUDED(mu_);
  // The adoption in force now, if any.
  bool InForce(Adoption* out) const GRAPHI_LOCKS_EXCLUDED(mu_);

 private:
  std::atomic<int> top_level_in_flight_{0};
  std::atomic<uint64_t> overlap_epoch_{0};
  mutable Mutex mu_;
  AdoptionSlots adoptions_ GRAPHI_GUARDED_BY(mu_);
  LoadClassTracker tracker_ GRAPHI_GUARDED_BY(mu_);
};

}  // namespace graphi

#endif  // GRAPHI_TF_CC_TUNING_GRAPH_LOAD_H_
