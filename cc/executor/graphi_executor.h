// GraphiExecutor: TensorFlow's Executor interface on Graphi's execution
// model — ops run on pinned executor teams chosen by a centralized scheduler.
//
// Built once per graph partition (Initialize) from TensorFlow's exported
// ImmutableExecutorState (kernels, GraphView, pending counts and frame
// information), into a read-only StepPlan (step_plan.h). Each Run/RunAsync
// runs a step of that plan with the per-step state: a SimplePropagatorState
// for graphs without v1 control flow, a PropagatorState (frames,
// iterations, dead tensors) otherwise.
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
//     the "stock" setting or a stock point "stock:IxA" (runtime.h), or
//     GRAPHI_EXECUTORS=stock[:IxA]: on TensorFlow's pools, or on a stock
//     point's inter-op pool with its intra-op pool for kernels
//     (stock_point_device.h). Initialize
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

#include "cc/executor/step_plan.h"
#include "cc/executor/stock_point_device.h"
#include "cc/executor/team_devices.h"
#include "cc/profiler/graph_profile.h"
#include "cc/util/mutex.h"
#include "tensorflow/core/common_runtime/executor.h"
#include "tensorflow/core/common_runtime/immutable_executor_state.h"
#include "tensorflow/core/common_runtime/local_executor_params.h"

namespace graphi {

// The executor type name users select: ConfigProto.experimental.executor_type
// or tf.experimental.function_executor_type.
inline constexpr char kExecutorTypeName[] = "GRAPHI";

class GraphiExecutor : public tensorflow::Executor, private StepHooks {
 public:
  explicit GraphiExecutor(const tensorflow::LocalExecutorParams& params);
  ~GraphiExecutor() override;

  absl::Status Initialize(const tensorflow::Graph& graph);

  absl::Status Run(const Args& args) override;

 private:
  // StepHooks: a step's start and end feed the autotuner.
  StepClock BeginStep() override;
  void EndStep(const StepClock& clock, bool ok) override;
  // The devices of the current teams, or null with *status set when the
  // GRAPHI setting in the environment is invalid.
  std::shared_ptr<const TeamDevices> CurrentTeamDevices(absl::Status* status);
  void RunAsyncInternal(const Args& args, DoneCallback done) override;
  // Builds stock_executor_ and stock_point_executor_ over `graph` and
  // immutable_state_'s kernels.
  absl::Status BuildStockExecutors(const tensorflow::Graph& graph);
  // Runs a step on TensorFlow's executor, timed for the autotuner like any
  // top-level step. Its ops run with the step's arrival number on their
  // threads (step_order.h), so a function they call is not taken for a
  // top-level step (on TensorFlow's own pools, only where an op may call
  // one: ops_may_start_nested_steps_). With `stock_point` (a stock point in force),
  // stock_point_executor_ on its pools, else stock_executor_ on the runner
  // TensorFlow passed.
  void RunOnStockExecutor(const Args& args, std::shared_ptr<StockPools> stock_point,
                          DoneCallback done);
  // Runs a whole step on the calling thread; returns its status.
  absl::Status RunOnCaller(const Args& args);

  tensorflow::ImmutableExecutorState immutable_state_;
  // The stock point executor's device (stock_point_device.h); outlives it.
  std::unique_ptr<StockPointDevice> stock_point_device_;
  // TensorFlow's executor over the same graph, running immutable_state_'s
  // kernels (it never deletes them): on the executor's own device for the
  // "stock" setting, so that setting is TensorFlow's executor and nothing
  // more, and on stock_point_device_ for stock points. Declared after
  // immutable_state_, so they are destroyed first, while the kernels they
  // point to still exist.
  std::unique_ptr<tensorflow::Executor> stock_executor_;
  std::unique_ptr<tensorflow::Executor> stock_point_executor_;
  // Whether an op of this graph may start a nested step on the thread that
  // runs it (MayStartNestedSteps). If none may, a step on TensorFlow's own
  // pools hands TensorFlow's runner its closures as they are: the arrival
  // number on their threads would serve no one, and wrapping each closure
  // costs an allocation. Set by Initialize().
  bool ops_may_start_nested_steps_ = true;
  std::shared_ptr<GraphProfile> profile_;
  // What steps read (step_plan.h); built by Initialize().
  std::unique_ptr<const StepPlan> plan_;
  ExecutorSettings settings_;            // set by the constructor only
  const absl::Status settings_status_;  // the error Initialize() returns

  // The devices on the teams last used, kept between steps (building them
  // per step would cost); they do not keep the teams (team_devices.h).
  Mutex devices_mu_;
  std::shared_ptr<const TeamDevices> devices_ GRAPHI_GUARDED_BY(devices_mu_);
};

}  // namespace graphi

#endif  // GRAPHI_TF_CC_EXECUTOR_GRAPHI_EXECUTOR_H_
