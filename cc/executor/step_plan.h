// StepPlan: everything a step reads of the executor that runs it, and the two
// ways an executor runs a step (the step itself: graphi_step.cc).
//
// The plan is read-only once the executor is initialized: TensorFlow's
// ImmutableExecutorState, the graph's profile (whose cost model the step
// feeds), the executor's knobs (ExecutorSettings) and which nodes are always
// cheap; from them it answers, per ready node, whether it runs inline, what
// it costs, whether it is worth sharing and its rank. A step's start and end
// go to the executor through StepHooks (the autotuner's bookkeeping). The
// executor includes this header and never the step's; the step includes
// this one and never the executor's.
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
// (caller_queue.h). Under TF_DETERMINISTIC_ORDER=1 a step uses TensorFlow's
// OrderedPropagatorState, as the stock executor does.
//
// Thread-safety: a StepPlan is immutable after construction and may be read
// by any number of steps at once; StepHooks must be thread-safe. Both entry
// points may be called concurrently, for the same plan too; each step's
// state is its own.
#ifndef GRAPHI_TF_CC_EXECUTOR_STEP_PLAN_H_
#define GRAPHI_TF_CC_EXECUTOR_STEP_PLAN_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cc/executor/team_devices.h"
#include "cc/profiler/graph_profile.h"
#include "cc/util/check.h"
#include "tensorflow/core/common_runtime/executor.h"
#include "tensorflow/core/common_runtime/immutable_executor_state.h"

namespace graphi {

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

// The executor's knobs, read from the environment when it is created
// (docs/tuning.md).
struct ExecutorSettings {
  bool profiling = true;
  int64_t inline_threshold_ns = 0;
  int64_t steal_threshold_ns = 0;  // < 0: work conservation off
  int64_t share_always_ns = 0;     // < 0: only with an idle team
  bool arrival_order = true;       // concurrent steps' ops: oldest step first
};

// What the executor does as a step starts and ends (thread-safe).
class StepHooks {
 public:
  virtual ~StepHooks() = default;
  virtual StepClock BeginStep() = 0;
  virtual void EndStep(const StepClock& clock, bool ok) = 0;
};

class StepPlan {
 public:
  // `state`, `profile` and `hooks` (the executor's) must outlive the plan.
  // always_cheap[n]: node n is a constant, a NoOp, or a kernel that calls
  // itself inexpensive.
  StepPlan(const tensorflow::ImmutableExecutorState* state, GraphProfile* profile,
           ExecutorSettings settings, std::vector<uint8_t> always_cheap, StepHooks* hooks)
      : state_(state),
        profile_(profile),
        settings_(settings),
        always_cheap_(std::move(always_cheap)),
        hooks_(hooks) {}

  const tensorflow::ImmutableExecutorState& immutable_state() const { return *state_; }
  GraphProfile& profile() const { return *profile_; }
  // Whether kernel times are recorded into the cost model (GRAPHI_PROFILE,
  // on by default; off makes steps read no clock).
  bool profiling() const { return settings_.profiling; }
  // Whether steps carry an arrival number (step_order.h).
  bool arrival_order() const { return settings_.arrival_order; }
  // GRAPHI_INLINE_THRESHOLD_NS (ns).
  int64_t inline_threshold_ns() const { return settings_.inline_threshold_ns; }

  // Whether a ready node is cheap enough to run inline where it became
  // ready: always-cheap nodes, whose cost is never measured (without this,
  // kernels that do not call themselves cheap would count as expensive
  // forever and be handed out one by one), and nodes measured below the
  // inline threshold.
  bool IsCheap(const tensorflow::NodeItem& item) const {
    GRAPHI_DCHECK(item.node_id >= 0 && static_cast<size_t>(item.node_id) < always_cheap_.size());
    if (always_cheap_[item.node_id]) return true;
    const int64_t estimate = profile_->costs().Estimate(item.node_id);
    return estimate >= 0 && estimate < settings_.inline_threshold_ns;
  }
  // What running a node inline costs, for a deferred node's wait: 0 for
  // constants and NoOps, its measured cost, else (not measured yet)
  // `unknown_ns`.
  int64_t InlineCost(const tensorflow::NodeItem& item, int64_t unknown_ns) const {
    if (item.const_tensor != nullptr || item.is_noop) return 0;
    const int64_t estimate = profile_->costs().Estimate(item.node_id);
    return estimate >= 0 ? estimate : unknown_ns;
  }
  // Whether a ready node runs on its team's work-conserving pool, where
  // idle teams take its parallel-for blocks: when `idle_team` (another
  // team's leader is idle now) and its measured cost is at least
  // GRAPHI_STEAL_THRESHOLD_NS, or at any time when it is at least
  // GRAPHI_SHARE_ALWAYS_NS (off by default). Never before it is profiled.
  bool WorthSharing(const tensorflow::NodeItem& item, bool idle_team) const {
    if (settings_.steal_threshold_ns < 0) return false;
    const int64_t estimate = profile_->costs().Estimate(item.node_id);
    if (estimate < 0) return false;
    if (idle_team) return estimate >= settings_.steal_threshold_ns;
    return settings_.share_always_ns >= 0 && estimate >= settings_.share_always_ns;
  }
  // Priority of a ready node for the scheduler's policy: its upward rank
  // (remaining critical path, ns) once profiled, 0 before.
  int64_t Rank(const tensorflow::NodeItem& item) const {
    return profile_->costs().Rank(item.node_id);
  }

  StepClock BeginStep() const { return hooks_->BeginStep(); }
  void EndStep(const StepClock& clock, bool ok) const { hooks_->EndStep(clock, ok); }

 private:
  const tensorflow::ImmutableExecutorState* const state_;
  GraphProfile* const profile_;
  const ExecutorSettings settings_;
  const std::vector<uint8_t> always_cheap_;
  StepHooks* const hooks_;
};

// The executor type string handed to kernels (functional ops instantiate
// their bodies with it, so nested functions stay on GRAPHI).
const std::string* ExecutorTypeForKernels();

// Starts a dispatched step of `plan` on `devices`' teams, or on TensorFlow's
// pools (args.runner, the executor's device) when `devices` is null. Calls
// `done` exactly once, possibly before returning.
void StartDispatchedStep(const tensorflow::Executor::Args& args, const StepPlan* plan,
                         std::shared_ptr<const TeamDevices> devices,
                         tensorflow::Executor::DoneCallback done);

// Runs a whole step of `plan` on the calling thread and returns its status.
// `devices` are the teams of the GRAPHI worker calling, whose devices its
// kernels then use; null off GRAPHI's threads (the executor's own device).
absl::Status RunCallerDrivenStep(const tensorflow::Executor::Args& args, const StepPlan* plan,
                                 std::shared_ptr<const TeamDevices> devices);

}  // namespace graphi

#endif  // GRAPHI_TF_CC_EXECUTOR_STEP_PLAN_H_
