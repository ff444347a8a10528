// Arrival order of steps, for ordering the ready ops of concurrent steps.
//
// Under critical_path_first the highest upward rank runs first, and the
// highest ranks of all belong to the first ops of a step (their remaining
// path is the whole step). With concurrent steps (serving: one per request)
// a newly arrived step would then always overtake the last ops of the steps
// before it, and old requests would finish late. So every step carries an
// arrival number, and the ready queue serves the oldest step's ops first,
// by rank within a step (ready_queue.h).
//
// A top-level step takes the next number. A step started while a thread
// runs an op of another step (a function call, a nested Session::Run, a
// loop body run as a function) takes that step's number: it is part of the
// same request and keeps its place.
//
// Free of TensorFlow types. Thread-safety: new numbers come from a relaxed
// atomic counter (numbers only need to be unique and increasing per
// thread); the current step is thread-local.
#ifndef GRAPHI_TF_CC_TEAMS_STEP_ORDER_H_
#define GRAPHI_TF_CC_TEAMS_STEP_ORDER_H_

#include <cstdint>

namespace graphi {

// No step: ops without one (arrival ordering off) compare as the oldest.
constexpr uint64_t kNoStepOrder = 0;

// The number of a new step: the current step's if this thread is running an
// op of one, else the next in the process (1, 2, ...).
uint64_t StepOrderForNewStep();

// The step whose op the calling thread runs, or kNoStepOrder.
uint64_t CurrentStepOrder();

// Marks the calling thread as running ops of step `order` for its lifetime,
// restoring the previous value after (steps nest).
class ScopedStepOrder {
 public:
  explicit ScopedStepOrder(uint64_t order);
  ~ScopedStepOrder();

  ScopedStepOrder(const ScopedStepOrder&) = delete;
  ScopedStepOrder& operator=(const ScopedStepOrder&) = delete;

 private:
  const uint64_t saved_;
};

}  // namespace graphi

#endif  // GRAPHI_TF_CC_TEAMS_STEP_ORDER_H_
