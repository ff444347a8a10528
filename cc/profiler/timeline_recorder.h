// Records every node execution of one step: which node, on which team, when.
//
// Armed per graph (GraphProfile::RecordNextStep); the step that picks the
// request up owns the recorder and hands the finished timeline back to the
// profile. Used to check the executed order in tests and for step timelines.
//
// Free of TensorFlow types. Thread-safety: thread-safe.
#ifndef GRAPHI_TF_CC_PROFILER_TIMELINE_RECORDER_H_
#define GRAPHI_TF_CC_PROFILER_TIMELINE_RECORDER_H_

#include <cstdint>
#include <mutex>
#include <vector>

#include "cc/profiler/execution_observer.h"

namespace graphi {

struct NodeExecution {
  int node_id = -1;
  int team = -1;
  bool merged = false;  // ran on every team's cores
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

class TimelineRecorder final : public ExecutionObserver {
 public:
  void OnNodeExecuted(int node_id, int team, bool merged, int64_t start_ns,
                      int64_t end_ns) override {
    std::lock_guard<std::mutex> l(mu_);
    executions_.push_back({node_id, team, merged, start_ns, end_ns});
  }
  std::vector<NodeExecution> Take() {
    std::lock_guard<std::mutex> l(mu_);
    return std::move(executions_);
  }

 private:
  std::mutex mu_;
  std::vector<NodeExecution> executions_;
};

}  // namespace graphi

#endif  // GRAPHI_TF_CC_PROFILER_TIMELINE_RECORDER_H_
