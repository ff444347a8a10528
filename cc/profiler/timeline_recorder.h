// Records every node execution of one step: which node, on which team, when.
//
// Armed per graph (StepRecorder::RecordNext, or every step up to a step
// number with GraphProfile::RecordStepsThrough); the step that picks the
// request up owns the recorder and hands the finished timeline back to the
// profile. Used to check the executed order in tests and for step timelines
// (graphi_tf.trace).
//
// The recorder also notes when the step started (its construction, when the
// step is created) and ended (Take()), on the same clock as the node executions
// (cc/util/clock.h), plus the wall-clock time of the start for humans.
//
// Free of TensorFlow types. Thread-safety: thread-safe.
#ifndef GRAPHI_TF_CC_PROFILER_TIMELINE_RECORDER_H_
#define GRAPHI_TF_CC_PROFILER_TIMELINE_RECORDER_H_

#include <chrono>
#include <cstdint>
#include <utility>
#include <vector>

#include "cc/profiler/execution_observer.h"
#include "cc/util/clock.h"
#include "cc/util/mutex.h"

namespace graphi {

struct NodeExecution {
  int node_id = -1;
  int team = -1;
  bool shared = false;  // on its team's work-conserving pool (ExecutionObserver)
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

// One recorded step. Times are MonotonicNowNs() nanoseconds (the clock of
// the node executions) except wall_start_unix_ns.
struct StepTimeline {
  int64_t step = 0;            // 1-based step number of the graph; set by the profile
  int64_t start_ns = 0;        // when the step was created
  int64_t end_ns = 0;          // when the step finished
  int64_t wall_start_unix_ns = 0;
  int num_teams = 0;           // teams of the layout the step ran on
  std::vector<NodeExecution> executions;  // in completion order
};

class TimelineRecorder final : public ExecutionObserver {
 public:
  explicit TimelineRecorder(int num_teams)
      : num_teams_(num_teams),
        start_ns_(MonotonicNowNs()),
        wall_start_unix_ns_(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                std::chrono::system_clock::now().time_since_epoch())
                                .count()) {}

  void OnNodeExecuted(int node_id, int team, bool shared, int64_t start_ns,
                      int64_t end_ns) override {
    MutexLock l(&mu_);
    executions_.push_back({node_id, team, shared, start_ns, end_ns});
  }

  // The step so far (called once, when it finishes); ends the step now.
  StepTimeline Take() {
    StepTimeline out;
    out.start_ns = start_ns_;
    out.end_ns = MonotonicNowNs();
    out.wall_start_unix_ns = wall_start_unix_ns_;
    out.num_teams = num_teams_;
    MutexLock l(&mu_);
    out.executions = std::move(executions_);
    return out;
  }

 private:
  const int num_teams_;
  const int64_t start_ns_;
  const int64_t wall_start_unix_ns_;
  Mutex mu_;
  std::vector<NodeExecution> executions_ GRAPHI_GUARDED_BY(mu_);
};

}  // namespace graphi

#endif  // GRAPHI_TF_CC_PROFILER_TIMELINE_RECORDER_H_
