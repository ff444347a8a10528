// GraphiExecutor: TensorFlow's Executor interface on Graphi's execution
// model — ops run on pinned executor teams chosen by a centralized scheduler.
//
// Built once per graph partition (Initialize) from TensorFlow's exported
// ImmutableExecutorState: kernels, GraphView, pending counts and frame
// information. Each Run/RunAsync runs a step (graphi_step.h) with the
// per-step state: a SimplePropagatorState for graphs without v1 control
// flow, a PropagatorState (frames, iterations, dead tensors) otherwise.
//
// Settings read from the environment when an executor is created:
// GRAPHI_PROFILE, GRAPHI_INLINE_THRESHOLD_NS, GRAPHI_STEAL_THRESHOLD_NS,
// GRAPHI_SHARE_ALWAYS_NS (docs/tuning.md). An invalid value fails
// Initialize() with an error naming the variable and its allowed values.
//
// Where a step runs:
//   * dispatched (the normal case): ready ops go to the process-wide
//     Scheduler, which hands them to teams; cheap ops run inline on the
//     thread that made them ready;
//   * on TensorFlow's own executor, when the autotuner visits or adopted
//     the "stock" setting (runtime.h) or GRAPHI_EXECUTORS=stock: Initialize
//     also builds the stock executor (tensorflow::NewLocalExecutor) over the
//     same graph and the same kernels, so "stock" is the stock executor's
//     speed by construction, not an imitation of it. Kernels are shared, not
//     created twice: stateful kernels (random generators, queues, readers)
//     keep one state whichever executor runs a step. GRAPHI still times those
//     steps for the autotuner. A step that must record its timeline
//     (graphi_tf.trace) runs GRAPHI's own step on TensorFlow's pools instead
//     (the runner TensorFlow passed, the executor's own device);
//   * caller-driven: Run() called from one of our own worker threads (a
//     kernel running a nested function synchronously) or a step that asks
//     for run_all_kernels_inline executes its ops on the calling thread, so a
//     worker never blocks waiting for work that needs a worker.
//
// Thread-safety: Run/RunAsync may be called concurrently from many threads;
// all per-step state lives in the step.
#ifndef GRAPHI_TF_CC_EXECUTOR_GRAPHI_EXECUTOR_H_
#define GRAPHI_TF_CC_EXECUTOR_GRAPHI_EXECUTOR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cc/executor/team_devices.h"
#include "cc/profiler/graph_registry.h"
#include "cc/util/mutex.h"
#include "tensorflow/core/common_runtime/executor.h"
#include "tensorflow/core/common_runtime/immutable_executor_state.h"
#include "tensorflow/core/common_runtime/local_executor_params.h"

namespace graphi {

// The executor type name users select: ConfigProto.experimental.executor_type
// or tf.experimental.function_executor_type.
inline constexpr char kExecutorTypeName[] = "GRAPHI";

// When and how a step started, for the autotuner. Only top-level steps
// (started off GRAPHI's threads, not a function nested in another step)
// report their times.
struct StepClock {
  bool top_level = false;
  bool concurrent = false;     // another top-level step of the graph was in flight
  int in_flight = 1;           // top-level steps of the graph in flight at its start
  uint64_t overlap_epoch = 0;
  int64_t start_ns = 0;
};

// The executor's settings from the environment (see above).
struct ExecutorSettings {
  bool profiling = true;
  int64_t inline_threshold_ns = 0;
  int64_t steal_threshold_ns = 0;  // < 0: work conservation off
  int64_t share_always_ns = 0;     // < 0: only with an idle team
  bool arrival_order = true;       // concurrent steps' ops: oldest step first
};

class GraphiExecutor : public tensorflow::Executor {
 public:
  explicit GraphiExecutor(const tensorflow::LocalExecutorParams& params);
  ~GraphiExecutor() override;

  absl::Status Initialize(const tensorflow::Graph& graph);

  absl::Status Run(const Args& args) override;

  // --- Used by the step (graphi_step.cc). ---
  const tensorflow::ImmutableExecutorState& immutable_state() const {
    return immutable_state_;
  }
  GraphProfile& profile() const { return *profile_; }
  // Whether kernel times are recorded into the cost model (GRAPHI_PROFILE,
  // on by default; off makes steps read no clock).
  bool profiling() const { return settings_.profiling; }
  // Whether this executor's steps carry an arrival number (step_order.h).
  bool arrival_order() const { return settings_.arrival_order; }
  // Whether a ready node is cheap enough to run inline where it became ready.
  bool IsCheap(const tensorflow::NodeItem& item) const;
  // What running a node inline costs, for a deferred node's wait: 0 for
  // constants and NoOps, its measured cost, else (not measured yet)
  // `unknown_ns`.
  int64_t InlineCost(const tensorflow::NodeItem& item, int64_t unknown_ns) const {
    if (item.const_tensor != nullptr || item.is_noop) return 0;
    const int64_t estimate = profile_->costs().Estimate(item.node_id);
    return estimate >= 0 ? estimate : unknown_ns;
  }
  // GRAPHI_INLINE_THRESHOLD_NS (ns).
  int64_t inline_threshold_ns() const { return settings_.inline_threshold_ns; }
  // Whether a ready node runs on its team's work-conserving pool, where
  // idle teams take its parallel-for blocks: when `idle_team` (another
  // team's leader is idle now) and its measured cost is at least
  // GRAPHI_STEAL_THRESHOLD_NS, or at any time when it is at least
  // GRAPHI_SHARE_ALWAYS_NS. Never before it is profiled.
  bool WorthSharing(const tensorflow::NodeItem& item, bool idle_team) const;
  // Priority of a ready node for the scheduler's policy: its upward rank
  // (remaining critical path, ns) once profiled, 0 before.
  int64_t Rank(const tensorflow::NodeItem& item) const {
    return profile_->costs().Rank(item.node_id);
  }
  // The devices of the current teams, or null with *status set when the
  // GRAPHI setting in the environment is invalid.
  std::shared_ptr<const TeamDevices> CurrentTeamDevices(absl::Status* status);
  // Called as a step is created and as it finishes: feeds the autotuner.
  StepClock BeginStep();
  void EndStep(const StepClock& clock, bool ok);
  // The executor type string handed to kernels (functional ops instantiate
  // their bodies with it, so nested functions stay on GRAPHI).
  static const std::string* ExecutorTypeForKernels();

 private:
  void RunAsyncInternal(const Args& args, DoneCallback done) override;
  // Builds stock_executor_ over `graph` and immutable_state_'s kernels.
  absl::Status BuildStockExecutor(const tensorflow::Graph& graph);
  // Runs a step on stock_executor_, timed for the autotuner like any top-level
  // step. Its ops run with the step's arrival number on their threads
  // (step_order.h), so a function they call is not taken for a top-level step.
  void RunOnStockExecutor(const Args& args, DoneCallback done);
  // Runs a whole step on the calling thread; returns its status.
  absl::Status RunOnCaller(const Args& args);

  tensorflow::ImmutableExecutorState immutable_state_;
  // TensorFlow's executor over the same graph, running immutable_state_'s
  // kernels (it never deletes them). Declared after immutable_state_, so it
  // is destroyed first, while the kernels it points to still exist.
  std::unique_ptr<tensorflow::Executor> stock_executor_;
  // always_cheap_[node_id]: a constant, a NoOp, or a kernel that calls itself
  // inexpensive. Read for every ready node, so a dense array (as the stock
  // executor's KernelStats keeps): a byte in one cache line instead of a load
  // through the NodeItem to the kernel and its vtable. Set by Initialize().
  std::vector<uint8_t> always_cheap_;
  std::shared_ptr<GraphProfile> profile_;
  ExecutorSettings settings_;            // set by the constructor only
  const absl::Status settings_status_;  // the error Initialize() returns

  Mutex devices_mu_;
  std::shared_ptr<const TeamDevices> devices_ GRAPHI_GUARDED_BY(devices_mu_);
};

}  // namespace graphi

#endif  // GRAPHI_TF_CC_EXECUTOR_GRAPHI_EXECUTOR_H_
