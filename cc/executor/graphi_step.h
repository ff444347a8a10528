// The two ways GraphiExecutor runs a step (the step itself: graphi_step.cc).
//
// Follows TensorFlow's executor contract (see docs/design.md):
//   * every Entry (an edge's tensor) is written once by its producer and
//     cleared by its consumer right after the consumer's kernel returns; the
//     propagator moves a tensor on its last out-edge, so refcounts stay at 1
//     and kernels can forward input buffers in place;
//   * the first error wins: it aborts the rendezvous and cancels the step
//     (or aborts the collective executor); ops not yet started are skipped,
//     ops in flight drain, and the step's outcome is reported exactly once,
//     last;
//   * kernels may defer work (inc/dec_num_deferred_ops); the step finishes
//     only when those are done too.
//
// Where ready ops go: in a dispatched step, cheap ops are run inline by the
// thread that made them ready, one expensive op is kept by that thread when
// it has nothing else to do, and the rest are handed to the Scheduler. In a
// caller-driven step everything runs on the calling thread; ops that become
// ready on other threads (async kernels completing) are queued for it
// (caller_queue.h).
//
// Under TF_DETERMINISTIC_ORDER=1 a step uses TensorFlow's
// OrderedPropagatorState, as the stock executor does: a thread runs the
// nodes it keeps inline highest (node id, frame, iteration) first.
//
// Thread-safety: both functions may be called concurrently, for the same
// executor too; each step's state is its own.
#ifndef GRAPHI_TF_CC_EXECUTOR_GRAPHI_STEP_H_
#define GRAPHI_TF_CC_EXECUTOR_GRAPHI_STEP_H_

#include <memory>

#include "cc/executor/graphi_executor.h"
#include "cc/executor/team_devices.h"
#include "tensorflow/core/common_runtime/executor.h"

namespace graphi {

// Starts a dispatched step of `executor` on `devices`' teams, or on
// TensorFlow's pools (args.runner, the executor's device) when `devices` is
// null. Calls `done` exactly once, possibly before returning.
void StartDispatchedStep(const tensorflow::Executor::Args& args, GraphiExecutor* executor,
                         std::shared_ptr<const TeamDevices> devices,
                         tensorflow::Executor::DoneCallback done);

// Runs a whole step of `executor` on the calling thread and returns its
// status. `devices` are the teams of the GRAPHI worker calling, whose
// devices its kernels then use; null off GRAPHI's threads (the executor's
// own device).
absl::Status RunCallerDrivenStep(const tensorflow::Executor::Args& args,
                                 GraphiExecutor* executor,
                                 std::shared_ptr<const TeamDevices> devices);

}  // namespace graphi

#endif  // GRAPHI_TF_CC_EXECUTOR_GRAPHI_STEP_H_
