// Observer hook through which the executor reports what it ran.
//
// A step holds the observers that are switched on for it (none, the cost
// model, a timeline recorder); the executor calls them after every kernel.
// With no observer a step reads no clock at all, so profiling is free when
// off.
//
// Free of TensorFlow types. Thread-safety: OnNodeExecuted is called
// concurrently from every thread that runs nodes of the step; implementations
// must be thread-safe.
#ifndef GRAPHI_TF_CC_PROFILER_EXECUTION_OBSERVER_H_
#define GRAPHI_TF_CC_PROFILER_EXECUTION_OBSERVER_H_

#include <cstdint>

namespace graphi {

class ExecutionObserver {
 public:
  virtual ~ExecutionObserver() = default;
  // Node `node_id` ran its kernel on team `team` (-1: off the teams) from
  // `start_ns` to `end_ns` on the monotonic clock. `shared`: it ran on its
  // team's work-conserving pool, split into blocks that idle teams' leaders
  // may take (StepPlan::WorthSharing), rather than on its team's own pool.
  virtual void OnNodeExecuted(int node_id, int team, bool shared, int64_t start_ns,
                              int64_t end_ns) = 0;
};

}  // namespace graphi

#endif  // GRAPHI_TF_CC_PROFILER_EXECUTION_OBSERVER_H_
