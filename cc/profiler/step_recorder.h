// StepRecorder: which steps of a graph record their timeline, and the last
// one recorded.
//
// A graph records the next step when asked (RecordNext), or every step up to
// a step number (RecordThrough, set process-wide through the registry for
// GRAPHI_TRACE), so the last recorded timeline is that step or, for a graph
// that ran fewer steps, its last one. Past that step the check on the step
// path is one relaxed load.
//
// Free of TensorFlow types. Thread-safety: thread-safe.
#ifndef GRAPHI_TF_CC_PROFILER_STEP_RECORDER_H_
#define GRAPHI_TF_CC_PROFILER_STEP_RECORDER_H_

#include <atomic>
#include <cstdint>
#include <utility>

#include "cc/profiler/timeline_recorder.h"
#include "cc/util/mutex.h"
#include "cc/util/thread_annotations.h"

namespace graphi {

class StepRecorder {
 public:
  // Arms the next step.
  void RecordNext() { record_next_.store(true); }
  // Records every step that starts while fewer than `step` steps have
  // finished (0: off).
  void RecordThrough(int64_t step) { record_through_step_.store(step, std::memory_order_relaxed); }
  // Called as a step starts, with the graph's finished steps: whether it
  // records its timeline (takes a RecordNext request).
  bool TakeRequest(int64_t steps_run) {
    if (record_next_.load(std::memory_order_relaxed) && record_next_.exchange(false)) return true;
    return Through(steps_run);
  }
  // Whether a step starting now would record (TakeRequest without taking).
  bool Pending(int64_t steps_run) const {
    return record_next_.load(std::memory_order_relaxed) || Through(steps_run);
  }
  // Keeps a recorded step, numbered `step` (the steps finished with it).
  void Keep(StepTimeline timeline, int64_t step) GRAPHI_LOCKS_EXCLUDED(mu_) {
    timeline.step = step;
    MutexLock l(&mu_);
    last_ = std::move(timeline);
  }
  StepTimeline Last() const GRAPHI_LOCKS_EXCLUDED(mu_) {
    MutexLock l(&mu_);
    return last_;
  }

 private:
  bool Through(int64_t steps_run) const {
    const int64_t through = record_through_step_.load(std::memory_order_relaxed);
    return through > 0 && steps_run < through;
  }

  std::atomic<bool> record_next_{false};
  std::atomic<int64_t> record_through_step_{0};
  mutable Mutex mu_;
  StepTimeline last_ GRAPHI_GUARDED_BY(mu_);
};

}  // namespace graphi

#endif  // GRAPHI_TF_CC_PROFILER_STEP_RECORDER_H_
