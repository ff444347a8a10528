// GraphiStep: the state of one run of a StepPlan (see step_plan.h for the
// contract it keeps).
//
// Layout of this file, as TensorFlow's executor.cc: the step's arguments
// (StepArgs), where its ops run (StepPlacement), input preparation and output
// processing (plain functions, compiled once), then the GraphiStep template
// (declarations, each with its contract, then out-of-line definitions,
// instantiated for the three propagators), then the two entry points.
//
// Thread-safety: any number of threads may Process() nodes of one step
// concurrently; shared fields are atomics or guarded by `mu_` /
// `deferred_mu_`. The step deletes itself before reporting its outcome.
#include "cc/executor/step_plan.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "cc/teams/caller_queue.h"
#include "cc/teams/scheduler.h"
#include "cc/teams/step_order.h"
#include "cc/profiler/execution_observer.h"
#include "cc/profiler/timeline_recorder.h"
#include "cc/util/check.h"
#include "cc/util/clock.h"
#include "cc/util/mutex.h"
#include "tensorflow/core/common_runtime/entry.h"
#include "tensorflow/core/common_runtime/propagator_state.h"
#include "tensorflow/core/common_runtime/renamed_device.h"
#include "tensorflow/core/common_runtime/simple_propagator_state.h"
#include "tensorflow/core/common_runtime/step_stats_collector.h"
#include "tensorflow/core/framework/cancellation.h"
#include "tensorflow/core/framework/collective.h"
#include "tensorflow/core/framework/log_memory.h"
#include "tensorflow/core/framework/node_def_util.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/rendezvous.h"
#include "tensorflow/core/lib/core/errors.h"
#include "tensorflow/core/lib/core/status.h"
#include "tensorflow/core/util/determinism.h"
#include "tensorflow/core/util/tensor_slice_reader_cache.h"

namespace graphi {
namespace {

using tensorflow::AllocatorAttributes;
using tensorflow::Device;
using tensorflow::Entry;
using tensorflow::NodeExecStatsInterface;
using tensorflow::NodeItem;
using tensorflow::OpKernelContext;
using tensorflow::TensorValue;
using TensorValueVec = absl::InlinedVector<TensorValue, 4>;
using AllocatorAttributeVec = absl::InlinedVector<AllocatorAttributes, 4>;

// ---------------------------------------------------------------------------
// The step's copy of Executor::Args: Args may be gone once RunAsync returns.
struct StepArgs {
  explicit StepArgs(const tensorflow::Executor::Args& args);

  const int64_t step_id;
  const int64_t start_time_usecs;
  const std::optional<absl::Time> deadline;
  tensorflow::RendezvousInterface* const rendezvous;
  tensorflow::CollectiveExecutor* const collective_executor;
  tensorflow::SessionState* const session_state;
  const std::string session_handle;
  const tensorflow::ConfigProto* const session_config;
  tensorflow::TensorStore* const tensor_store;
  tensorflow::ScopedStepContainer* const step_container;
  tensorflow::StepStatsCollectorInterface* const stats_collector;
  tensorflow::CallFrameInterface* const call_frame;
  tensorflow::CancellationManager* const cancellation_manager;
  tsl::CoordinationServiceAgent* const coordination_service_agent;
  const std::optional<tensorflow::ManagedStackTrace> stack_trace;
  tensorflow::Executor::Args::Runner runner;  // never empty (inline if not given)
  const bool run_all_kernels_inline;
  const bool sync_on_finish;
  const bool log_memory;
};

StepArgs::StepArgs(const tensorflow::Executor::Args& args)
    : step_id(args.step_id),
      start_time_usecs(args.start_time_usecs),
      deadline(args.deadline),
      rendezvous(args.rendezvous),
      collective_executor(args.collective_executor),
      session_state(args.session_state),
      session_handle(args.session_handle),
      session_config(args.session_config),
      tensor_store(args.tensor_store),
      step_container(args.step_container),
      stats_collector(args.stats_collector),
      call_frame(args.call_frame),
      cancellation_manager(args.cancellation_manager),
      coordination_service_agent(args.coordination_service_agent),
      stack_trace(args.stack_trace),
      runner(args.runner),
      run_all_kernels_inline(args.run_all_kernels_inline),
      sync_on_finish(args.sync_on_finish),
      log_memory(tensorflow::LogMemory::IsEnabled()) {
  if (!runner) runner = [](std::function<void()> fn) { fn(); };
}

// ---------------------------------------------------------------------------
// Where a step's ops run: the one place that knows whether the step is
// dispatched to teams (ready ops go to the Scheduler of `devices`), on
// TensorFlow's pools (no devices and no queue: ready ops go to the runner
// TensorFlow passed, kernels use the executor's own device and its shared
// intra-op pool, as under the stock executor) or caller-driven (everything
// runs on the thread draining the CallerQueue; `devices` is then the calling
// worker's teams, or null off GRAPHI's threads), and whether the caller
// supplied the intra-op pool.
class StepPlacement {
 public:
  // `runner` must outlive the placement (the step's StepArgs).
  StepPlacement(std::shared_ptr<const TeamDevices> devices, CallerQueue* caller_queue,
                Device* base, tensorflow::thread::ThreadPoolInterface* user_pool,
                const tensorflow::Executor::Args::Runner* runner);

  bool caller_driven() const { return caller_queue_ != nullptr; }
  // Whether the step runs on TensorFlow's pools (the "stock" setting).
  bool on_stock_pools() const { return caller_queue_ == nullptr && devices_ == nullptr; }
  // The queue a caller-driven step reports to; null when dispatched.
  CallerQueue* caller_queue() const { return caller_queue_; }
  // Whether ready ops are ordered by rank (dispatched, critical_path_first).
  bool use_ranks() const;
  // Teams of the layout the step runs on; 0 without teams.
  int num_teams() const;
  // The team the calling thread serves for this step's teams, or -1.
  int CurrentTeam() const;
  // The device kernels run by `team` (-1: no team) see.
  Device* DeviceForTeam(int team) const;
  // Team `team`'s device over its work-conserving pool when an op of this
  // step run by this thread may share its blocks; null otherwise.
  Device* SharingDevice(int team) const;
  // Whether another team's leader than `team`'s is idle now.
  bool IdleTeamOtherThan(int team) const;
  // Runs `run(team)` on another thread: the caller's queue, the runner
  // (team -1), or the Scheduler, behind the ops of older steps than
  // `step_order` and at priority `rank` among its own step's.
  void Hand(int64_t rank, uint64_t step_order, std::function<void(int team)> run) const;

 private:
  const std::shared_ptr<const TeamDevices> devices_;
  CallerQueue* const caller_queue_;
  Device* const base_;
  const tensorflow::Executor::Args::Runner* const runner_;
  // Set when the caller supplied the step's intra-op pool: every kernel of
  // the step uses it, whichever team runs the kernel.
  std::unique_ptr<Device> user_pool_device_;
};

StepPlacement::StepPlacement(std::shared_ptr<const TeamDevices> devices,
                             CallerQueue* caller_queue, Device* base,
                             tensorflow::thread::ThreadPoolInterface* user_pool,
                             const tensorflow::Executor::Args::Runner* runner)
    : devices_(std::move(devices)), caller_queue_(caller_queue), base_(base), runner_(runner) {
  GRAPHI_DCHECK(runner_ != nullptr && *runner_);
  if (user_pool != nullptr) {
    user_pool_device_ = tensorflow::RenamedDevice::NewRenamedDevice(
        base->name(), base, /*owns_underlying=*/false,
        /*isolate_session_state=*/false, user_pool);
  }
}

bool StepPlacement::use_ranks() const {
  return !caller_driven() && devices_ != nullptr &&
         devices_->teams()->scheduler().policy() == ReadyPolicy::kCriticalPathFirst;
}

int StepPlacement::num_teams() const {
  return devices_ == nullptr ? 0 : devices_->teams()->num_teams();
}

int StepPlacement::CurrentTeam() const {
  if (devices_ == nullptr) return -1;
  if (Scheduler::Current() != &devices_->teams()->scheduler()) return -1;
  return Scheduler::CurrentTeam();
}

Device* StepPlacement::DeviceForTeam(int team) const {
  if (user_pool_device_ != nullptr) return user_pool_device_.get();
  if (devices_ == nullptr) return base_;
  return devices_->device(team);
}

Device* StepPlacement::SharingDevice(int team) const {
  // A caller-driven step keeps every op on its thread, and a caller's pool
  // is not ours to widen.
  if (caller_driven() || user_pool_device_ != nullptr || team < 0 || devices_ == nullptr) {
    return nullptr;
  }
  if (Scheduler::Current() != &devices_->teams()->scheduler()) return nullptr;
  return devices_->wide_device(team);  // null with one team
}

bool StepPlacement::IdleTeamOtherThan(int team) const {
  return devices_->teams()->scheduler().IdleThiefFor(team);
}

void StepPlacement::Hand(int64_t rank, uint64_t step_order,
                         std::function<void(int team)> run) const {
  if (caller_driven()) {
    caller_queue_->Push([this, run = std::move(run)] { run(CurrentTeam()); });
    return;
  }
  if (on_stock_pools()) {
    (*runner_)([run = std::move(run)] { run(-1); });
    return;
  }
  ReadyTask task;
  task.rank = rank;
  task.step_order = step_order;
  task.run = std::move(run);
  devices_->teams()->scheduler().Submit(std::move(task));
}

// ---------------------------------------------------------------------------
// Input preparation and output processing: the same for every propagator.

const tensorflow::Tensor* EmptyTensor() {
  static const tensorflow::Tensor* const empty = new tensorflow::Tensor();
  return empty;
}

absl::Status ExpectedRefError(const NodeItem& item, int i) {
  return tensorflow::AttachDef(
      tensorflow::errors::InvalidArgument(i, "-th input expects a ref type"), item.kernel->def());
}

// Input `i` has no value: only a Merge (waiting for one live input) or a
// transfer node (which forwards deadness) gets here.
void PrepareMissingInput(const NodeItem& item, Entry* entry, TensorValue* inp,
                         bool* is_input_dead) {
  inp->mutex_if_ref = nullptr;
  if (item.is_merge) {
    inp->tensor = nullptr;
    return;
  }
  entry->state = Entry::State::HAS_CONST_TENSOR;
  entry->const_tensor = EmptyTensor();
  inp->tensor = const_cast<tensorflow::Tensor*>(EmptyTensor());
  *is_input_dead = true;
}

// Input `i` refers to a variable's tensor: passed as a ref, or read once.
absl::Status PrepareRefInput(const NodeItem& item, int i, bool expect_ref, Entry* entry,
                             TensorValue* inp) {
  tensorflow::mutex* ref_mu = entry->ref_tensor.mu;
  tensorflow::Tensor* ref = entry->ref_tensor.tensor;
  {
    tensorflow::tf_shared_lock l(*ref_mu);
    if (TF_PREDICT_FALSE(!ref->IsInitialized() && !item.is_initialization_op)) {
      return tensorflow::AttachDef(
          tensorflow::errors::FailedPrecondition("Attempting to use uninitialized value ",
                                                 item.kernel->requested_input(i)),
          item.kernel->def());
    }
  }
  if (expect_ref) {
    inp->mutex_if_ref = ref_mu;
    inp->tensor = ref;
    return absl::OkStatus();
  }
  // The consumer wants a value: read the referenced tensor once, under its
  // lock, and from then on treat the entry as a value.
  {
    tensorflow::tf_shared_lock l(*ref_mu);
    entry->val.Init(*ref);
  }
  entry->state = Entry::State::HAS_VALUE;
  inp->mutex_if_ref = nullptr;
  inp->tensor = entry->val.get();
  // Another op may have re-assigned the variable with a new dtype since the
  // producer ran.
  if (TF_PREDICT_FALSE(item.input_type(i) != inp->tensor->dtype())) {
    return tensorflow::AttachDef(
        tensorflow::errors::InvalidArgument(
            i, "-th input expects type ", tensorflow::DataTypeString(item.input_type(i)),
            " but automatically dereferenced input tensor has type ",
            tensorflow::DataTypeString(inp->tensor->dtype())),
        item.kernel->def());
  }
  return absl::OkStatus();
}

// Fills the kernel's inputs from the node's input entries.
absl::Status PrepareInputs(const NodeItem& item, Entry* first_input, TensorValueVec* inputs,
                           AllocatorAttributeVec* attrs, bool* is_input_dead) {
  for (int i = 0; i < item.num_inputs; ++i) {
    const bool expect_ref =
        TF_PREDICT_FALSE(item.is_any_input_ref_typed) && tensorflow::IsRefType(item.input_type(i));
    Entry* entry = first_input + i;
    (*attrs)[i] = entry->alloc_attr;
    TensorValue* inp = &(*inputs)[i];
    switch (entry->state) {
      case Entry::State::NO_VALUE:
        PrepareMissingInput(item, entry, inp, is_input_dead);
        break;
      case Entry::State::HAS_VALUE:
        if (TF_PREDICT_FALSE(expect_ref)) return ExpectedRefError(item, i);
        inp->mutex_if_ref = nullptr;
        inp->tensor = entry->val.get();
        break;
      case Entry::State::HAS_CONST_TENSOR:
        if (TF_PREDICT_FALSE(expect_ref)) return ExpectedRefError(item, i);
        inp->mutex_if_ref = nullptr;
        inp->tensor = const_cast<tensorflow::Tensor*>(entry->const_tensor);
        break;
      case Entry::State::HAS_REF_TENSOR:
        TF_RETURN_IF_ERROR(PrepareRefInput(item, i, expect_ref, entry, inp));
        break;
    }
  }
  return absl::OkStatus();
}

// The kernel's error, with its node and, when memory ran out, the step's
// allocation report.
absl::Status KernelError(const NodeItem& item, absl::Status s,
                         tensorflow::StepStatsCollectorInterface* stats_collector) {
  s = tensorflow::AttachDef(s, item.kernel->def());
  if (s.code() == absl::StatusCode::kResourceExhausted && stats_collector != nullptr) {
    const std::string report = stats_collector->ReportAllocsOnResourceExhausted(s.message());
    s = absl::Status(s.code(), absl::StrCat(s.message(), report));
  }
  return s;
}

// Moves output `i` (of the declared type) into its entry.
void SetOutputEntry(int i, const TensorValue& val, OpKernelContext* ctx, Entry* out,
                    bool log_memory) {
  if (val.is_ref()) {
    out->state = Entry::State::HAS_REF_TENSOR;
    out->ref_tensor.tensor = val.tensor;
    out->ref_tensor.mu = val.mutex_if_ref;
    if (log_memory) {
      tensorflow::Tensor to_log;
      {
        tensorflow::tf_shared_lock l(*out->ref_tensor.mu);
        to_log = *out->ref_tensor.tensor;
      }
      tensorflow::LogMemory::RecordTensorOutput(ctx->op_kernel().name(), ctx->step_id(), i,
                                                to_log);
    }
    return;
  }
  out->state = Entry::State::HAS_VALUE;
  out->val.Init(std::move(*val.tensor));
  if (log_memory) {
    tensorflow::LogMemory::RecordTensorOutput(ctx->op_kernel().name(), ctx->step_id(), i,
                                              *out->val);
  }
}

// Moves the kernel's outputs into `outputs`; an error for a missing or
// mistyped output.
absl::Status ProcessOutputs(const NodeItem& item, OpKernelContext* ctx, Entry* outputs,
                            NodeExecStatsInterface* stats,
                            tensorflow::StepStatsCollectorInterface* stats_collector,
                            bool log_memory) {
  absl::Status s = ctx->status();
  if (!s.ok()) return KernelError(item, s, stats_collector);
  for (int i = 0; i < item.num_outputs; ++i) {
    const TensorValue val = ctx->release_output(i);
    if (val.tensor == nullptr) {
      if (!(item.is_recv_or_switch || (item.outputs_required && !item.outputs_required[i]))) {
        s.Update(tensorflow::errors::Internal(
            "Missing ", i, "-th output from ",
            tensorflow::FormatNodeDefForError(item.kernel->def())));
      }
      continue;
    }
    Entry* out = outputs + i;
    out->alloc_attr = ctx->output_alloc_attr(i);
    const tensorflow::DataType dtype = val.dtype_safe();
    if (dtype == item.output_type(i)) {
      if (stats != nullptr && val.tensor->IsInitialized()) stats->SetOutput(i, val.tensor);
      SetOutputEntry(i, val, ctx, out, log_memory);
    } else {
      s.Update(tensorflow::errors::Internal(
          "Output ", i, " of type ", tensorflow::DataTypeString(dtype),
          " does not match declared output type ",
          tensorflow::DataTypeString(item.output_type(i)), " for node ",
          tensorflow::FormatNodeDefForError(item.kernel->def())));
    }
    // Values are handed over by pointer to a heap tensor the context no
    // longer owns; refs point into the variable and must not be freed.
    if (!val.is_ref()) delete val.tensor;
  }
  return s;
}

// ---------------------------------------------------------------------------
// The step.

template <class PropagatorStateType>
class GraphiStep {
 public:
  using TaggedNode = typename PropagatorStateType::TaggedNode;
  using TaggedNodeSeq = typename PropagatorStateType::TaggedNodeSeq;
  using TaggedNodeReadyQueue = typename PropagatorStateType::TaggedNodeReadyQueue;

  // The nodes this thread runs next (FIFO, or the ordered propagator's
  // order), and at most one deferred expensive node: it runs here once the
  // queue is empty, unless the queued work it waits behind adds up to the
  // inline threshold first, and then it is handed out (ScheduleReady says
  // why). Only this thread touches it.
  class InlineQueue {
   public:
    void push_back(const TaggedNode& tagged) { queue_.push_back(tagged); }
    bool empty() const { return queue_.empty() && !deferred_.has_value(); }
    bool queue_empty() const { return queue_.empty(); }
    bool has_deferred() const { return deferred_.has_value(); }
    const TaggedNode& deferred() const { return *deferred_; }
    void Defer(const TaggedNode& tagged) {
      deferred_ = tagged;
      waited_ns_ = 0;
    }
    // The next node to run here. Sets *hand_out to the deferred node when
    // the work run since it was deferred reached `threshold_ns` (the caller
    // hands it to another thread).
    TaggedNode Pop(const StepPlan& plan, int64_t threshold_ns,
                   std::optional<TaggedNode>* hand_out) {
      if (queue_.empty()) {
        const TaggedNode tagged = *deferred_;
        deferred_.reset();
        return tagged;
      }
      const TaggedNode tagged = queue_.front();
      queue_.pop_front();
      if (deferred_.has_value()) {
        waited_ns_ += plan.InlineCost(tagged.get_node_item(), threshold_ns);
        if (waited_ns_ >= threshold_ns) {
          *hand_out = *deferred_;
          deferred_.reset();
        }
      }
      return tagged;
    }

   private:
    TaggedNodeReadyQueue queue_;
    std::optional<TaggedNode> deferred_;
    int64_t waited_ns_ = 0;  // estimated work run since deferred_ was set
  };

  // A caller-driven step has a `caller_queue`, and null `devices` when it
  // runs off GRAPHI's threads; a dispatched step has no queue, and `devices`
  // unless it runs on TensorFlow's pools.
  GraphiStep(const tensorflow::Executor::Args& args, const StepPlan* executor,
             std::shared_ptr<const TeamDevices> devices, CallerQueue* caller_queue);
  ~GraphiStep();

  // Activates the roots and hands them out. Reports the outcome (possibly
  // before returning) exactly once: to `done`, or to the CallerQueue of a
  // caller-driven step, which passes no `done`.
  void Start(tensorflow::Executor::DoneCallback done);

 private:
  struct AsyncState;
  // Buffers one Process() call reuses for every node it runs.
  struct Scratch {
    TensorValueVec inputs;
    AllocatorAttributeVec input_alloc_attrs;
    tensorflow::EntryVector outputs;
    TaggedNodeSeq ready;
    // The running team's work-conserving device, or null
    // (StepPlacement::SharingDevice): the same for every node this thread
    // runs in one ProcessAll, so asked once there, not per node (it reads
    // a thread-local through __tls_get_addr).
    Device* wide = nullptr;
  };

  // --- Handing out ready nodes.
  // The node's priority: its upward rank under critical_path_first, 0 under
  // fifo (so neither the queue nor the inline choice reorders by rank).
  int64_t Rank(const NodeItem& item) const;
  // Hands `tagged` to another thread: the caller's queue or the Scheduler.
  void Dispatch(const TaggedNode& tagged);
  // Splits `ready` between `inline_ready` (run next by this thread) and
  // other threads; with no `inline_ready`, hands out all of them
  // (DispatchAll).
  void ScheduleReady(TaggedNodeSeq* ready, InlineQueue* inline_ready);
  // Hands out nodes made ready off the inline path (the roots, an async
  // kernel's successors): each expensive node alone, the cheap and dead ones
  // together as one task.
  void DispatchAll(const TaggedNodeSeq& ready);

  // --- Running nodes.
  // Runs `tagged` and then every node it makes ready inline, on team `team`.
  void Process(TaggedNode tagged, int team) { ProcessAll(&tagged, 1, team); }
  // Runs `nodes[0..count)` and every node they make ready inline.
  void ProcessAll(const TaggedNode* nodes, size_t count, int team);
  // Runs one node; returns whether the step has no outstanding ops left.
  bool ProcessNode(const TaggedNode& tagged, int team, OpKernelContext::Params* params,
                   Scratch* scratch, InlineQueue* inline_ready);
  // The step already failed: skips the kernel and releases the inputs.
  bool ProcessSkipped(const NodeItem& item, Entry* first_input, Scratch* scratch,
                      InlineQueue* inline_ready);
  // A dead node runs no kernel; its outputs stay dead.
  void ProcessDead(const NodeItem& item, tensorflow::EntryVector* outputs);
  // A NoOp runs nothing.
  void ProcessNoop(NodeExecStatsInterface* stats);
  // A constant hands out its (never forwarded) tensor directly.
  void ProcessConstTensor(const NodeItem& item, NodeExecStatsInterface* stats,
                          tensorflow::EntryVector* outputs);
  // Prepares the inputs and runs the kernel: synchronously (outputs in
  // scratch), or launched asynchronously (*launched_async; the node then
  // completes in AsyncDone).
  absl::Status ProcessKernel(const TaggedNode& tagged, Entry* first_input, int team,
                             NodeExecStatsInterface* stats, OpKernelContext::Params* params,
                             Scratch* scratch, bool* launched_async);
  // Runs a synchronous kernel and collects its outputs.
  absl::Status ProcessSync(const NodeItem& item, OpKernelContext::Params* params,
                           tensorflow::EntryVector* outputs, NodeExecStatsInterface* stats,
                           int team, Device* wide);
  // Launches an async kernel with a copy of `params`.
  void ProcessAsync(const NodeItem& item, const OpKernelContext::Params& params,
                    const TaggedNode& tagged, Entry* first_input,
                    NodeExecStatsInterface* stats, int team);
  // An async kernel finished (on any thread): completes its node.
  void AsyncDone(AsyncState* state, int64_t start_ns, int team);
  // Work conservation: whether the op runs on its team's work-conserving
  // pool `wide` (Scratch::wide; see StepPlan::WorthSharing).
  Device* RunDevice(const NodeItem& item, Device* device, Device* wide, int team);
  // The node's stats object when the step collects stats, else null.
  NodeExecStatsInterface* StartStats(const TaggedNode& tagged, OpKernelContext::Params* params);
  // Releases the inputs, propagates the outputs if `s` is ok, clears them,
  // and accounts for the node (NodeDone).
  bool CompleteNode(const TaggedNode& tagged, Entry* first_input, const absl::Status& s,
                    NodeExecStatsInterface* stats, Scratch* scratch,
                    InlineQueue* inline_ready);
  // The parts of a kernel's params that are the same for the whole step.
  void FillStepParams(OpKernelContext::Params* params);
  void NotifyObservers(int node_id, int team, bool shared, int64_t start_ns, int64_t end_ns);

  // --- Accounting and finishing.
  // Accounts for a finished node (hands out `ready` if `s` is ok, else
  // records the error); returns true when no ops are outstanding.
  bool NodeDone(const absl::Status& s, TaggedNodeSeq* ready, NodeExecStatsInterface* stats,
                InlineQueue* inline_ready);
  // Keeps `s` if it is the step's first error; then *cancel_with is the
  // status to cancel the step with (derived if a cancellation caused it).
  bool RecordFirstError(const absl::Status& s, absl::Status* cancel_with);
  // The abort fan-out: ops not yet started are skipped from now on, the
  // rendezvous is aborted and the step cancelled (else its collectives
  // aborted).
  void StartAbort(const absl::Status& s, const absl::Status& cancel_with);
  void IncDeferredOps();
  void DecDeferredOps();
  // Finishes now, or when the last deferred op is done.
  void ScheduleFinish();
  // The step's status, after the device's refresh or sync.
  absl::Status FinalStatus();
  // Reports the outcome and deletes the step.
  void Finish();

  const StepPlan* const executor_;
  const tensorflow::ImmutableExecutorState& immutable_;
  PropagatorStateType propagator_;
  StepArgs args_;  // non-const only for kernels' params->runner
  const StepPlacement placement_;
  const bool use_ranks_;
  // Who hears about each kernel run: the cost model while profiling, a
  // timeline recorder when this step was asked to record. Empty: no clock.
  absl::InlinedVector<ExecutionObserver*, 2> observers_;
  std::unique_ptr<TimelineRecorder> timeline_;
  const StepClock step_clock_;  // for the autotuner (top-level steps only)
  // The step's arrival number (step_order.h); its ops and the steps they
  // start carry it (it also tells the executor that those are nested, not
  // top-level steps). queue_order_ is what the scheduler orders by:
  // step_order_, or kNoStepOrder when the executor's arrival order is off.
  const uint64_t step_order_;
  const uint64_t queue_order_;

  tensorflow::DeviceContext* device_context_ = nullptr;
  tensorflow::checkpoint::TensorSliceReaderCacheWrapper* slice_reader_cache_ = nullptr;
  tensorflow::Executor::DoneCallback done_;

  std::atomic<int> num_outstanding_ops_{0};
  std::atomic<bool> aborted_{false};

  Mutex mu_;
  absl::Status status_ GRAPHI_GUARDED_BY(mu_);

  Mutex deferred_mu_;
  int num_deferred_ops_ GRAPHI_GUARDED_BY(deferred_mu_) = 0;
  bool finish_when_deferred_ops_done_ GRAPHI_GUARDED_BY(deferred_mu_) = false;
};

// Everything an async kernel needs after ComputeAsync returns.
template <class P>
struct GraphiStep<P>::AsyncState {
  AsyncState(const OpKernelContext::Params& p, const TaggedNode& t, const NodeItem* i,
             Entry* first, NodeExecStatsInterface* s)
      : saved_inputs(p.inputs.begin(), p.inputs.end()),
        saved_input_alloc_attrs(p.input_alloc_attrs.begin(), p.input_alloc_attrs.end()),
        params(p),
        tagged(t),
        item(i),
        first_input(first),
        ctx(RebindInputs(&params, saved_inputs, saved_input_alloc_attrs), i->num_outputs),
        stats(s) {}

  static OpKernelContext::Params* RebindInputs(OpKernelContext::Params* p,
                                               const TensorValueVec& inputs,
                                               const AllocatorAttributeVec& attrs) {
    p->inputs = inputs;
    p->input_alloc_attrs = attrs;
    p->eigen_gpu_device = nullptr;  // not shared with the original params
    return p;
  }

  TensorValueVec saved_inputs;
  AllocatorAttributeVec saved_input_alloc_attrs;
  OpKernelContext::Params params;
  TaggedNode tagged;
  const NodeItem* item;
  Entry* first_input;
  OpKernelContext ctx;
  NodeExecStatsInterface* stats;
};

template <class P>
GraphiStep<P>::GraphiStep(const tensorflow::Executor::Args& args, const StepPlan* executor,
                          std::shared_ptr<const TeamDevices> devices, CallerQueue* caller_queue)
    : executor_(executor),
      immutable_(executor->immutable_state()),
      propagator_(immutable_, args.step_id, /*vlog=*/false),
      args_(args),
      placement_(std::move(devices), caller_queue, immutable_.params().device,
                 args.user_intra_op_threadpool, &args_.runner),
      use_ranks_(placement_.use_ranks()),
      step_clock_(executor->BeginStep()),
      step_order_(StepOrderForNewStep()),
      queue_order_(executor->arrival_order() ? step_order_ : kNoStepOrder) {
  // The executor runs such steps on the caller (RunCallerDrivenStep).
  GRAPHI_DCHECK(!args.run_all_kernels_inline || caller_queue != nullptr);
  GraphProfile& profile = executor->profile();
  const bool record = profile.recorder().TakeRequest(profile.steps_run());
  // Kernel timing is sampled (step_timing_sampler.h); a recorded step is timed
  // anyway, so it feeds the cost model too.
  if (executor->profiling() && (record || profile.TakeTimingTurn())) {
    observers_.push_back(&executor->profile().costs());
  }
  if (record) {
    timeline_ = std::make_unique<TimelineRecorder>(placement_.num_teams());
    observers_.push_back(timeline_.get());
  }
}

template <class P>
GraphiStep<P>::~GraphiStep() {
  if (device_context_ != nullptr) device_context_->Unref();
  delete slice_reader_cache_;
}

template <class P>
void GraphiStep<P>::Start(tensorflow::Executor::DoneCallback done) {
  done_ = std::move(done);
  absl::Status s = immutable_.params().device->TryGetDeviceContext(&device_context_);
  if (!s.ok()) {
    {
      MutexLock l(&mu_);
      status_ = s;
    }
    Finish();  // reports `s`
    return;
  }
  slice_reader_cache_ = new tensorflow::checkpoint::TensorSliceReaderCacheWrapper;
  TaggedNodeSeq ready;
  propagator_.ActivateRoots(immutable_.root_nodes(), &ready);
  num_outstanding_ops_.store(static_cast<int>(ready.size()));
  if (ready.empty()) {
    Finish();
    return;
  }
  ScheduleReady(&ready, /*inline_ready=*/nullptr);
}

template <class P>
int64_t GraphiStep<P>::Rank(const NodeItem& item) const {
  return use_ranks_ ? executor_->Rank(item) : 0;
}

template <class P>
void GraphiStep<P>::Dispatch(const TaggedNode& tagged) {
  placement_.Hand(Rank(tagged.get_node_item()), queue_order_,
                  [this, tagged](int team) { Process(tagged, team); });
}

template <class P>
void GraphiStep<P>::ScheduleReady(TaggedNodeSeq* ready, InlineQueue* inline_ready) {
  if (ready->empty()) return;
  if (inline_ready == nullptr) {
    DispatchAll(*ready);
    return;
  }
  if (placement_.caller_driven()) {
    for (const TaggedNode& t : *ready) inline_ready->push_back(t);
    return;
  }
  const TaggedNode* keep = nullptr;
  for (const TaggedNode& t : *ready) {
    const NodeItem& item = t.get_node_item();
    if (t.get_is_dead() || executor_->IsCheap(item)) {
      inline_ready->push_back(t);
    } else if (keep == nullptr || Rank(item) > Rank(keep->get_node_item())) {
      if (keep != nullptr) Dispatch(*keep);
      keep = &t;
    } else {
      Dispatch(t);
    }
  }
  if (keep == nullptr) return;
  // Keep one expensive op on this thread when it would otherwise idle: it
  // saves a hand-off and reuses the inputs still in this core's cache. When
  // cheap work is queued, the op is deferred: it runs here once the queue is
  // empty, or goes to another thread as soon as the work it waited behind
  // reaches GRAPHI_INLINE_THRESHOLD_NS (InlineQueue::Pop). Handing it out at
  // once, as stock TensorFlow does, starts a second chain of the step on
  // another team that goes on inline there: in an LSTM request on the 2-vCPU
  // Xeon one op of 26 us handed out behind a few cheap ops split the loop's
  // ops of about 1 us over both teams for the rest of the step (1.35 ms a
  // request against 1.1 ms on one team). It must not simply wait in the
  // queue behind that work: it might block (a py_func waiting for a partner)
  // on a node only that work makes ready, which would then sit behind it in
  // this thread's queue, out of any substitute's reach
  // (tests/unit/test_no_hang.py hung so). Deferred, it runs only once
  // nothing else is queued here, as when it is kept outright.
  if (inline_ready->empty()) {
    inline_ready->push_back(*keep);
  } else if (!inline_ready->has_deferred()) {
    inline_ready->Defer(*keep);
  } else if (Rank(keep->get_node_item()) > Rank(inline_ready->deferred().get_node_item())) {
    Dispatch(inline_ready->deferred());
    inline_ready->Defer(*keep);
  } else {
    Dispatch(*keep);
  }
}

template <class P>
void GraphiStep<P>::DispatchAll(const TaggedNodeSeq& ready) {
  // A step's roots are mostly cheap (arguments, constants, variable
  // handles), and each costs less than a hand-off: rather than one task per
  // root, spread over every idle team, they go together, with what they
  // make ready inline, to one team.
  TaggedNodeSeq cheap;
  int64_t cheap_rank = 0;
  for (const TaggedNode& t : ready) {
    const NodeItem& item = t.get_node_item();
    if (t.get_is_dead() || executor_->IsCheap(item)) {
      cheap_rank = cheap.empty() ? Rank(item) : std::max(cheap_rank, Rank(item));
      cheap.push_back(t);
    } else {
      Dispatch(t);
    }
  }
  if (cheap.size() == 1) {
    Dispatch(cheap[0]);
  } else if (!cheap.empty()) {
    placement_.Hand(cheap_rank, queue_order_, [this, cheap = std::move(cheap)](int team) {
      ProcessAll(cheap.data(), cheap.size(), team);
    });
  }
}

template <class P>
void GraphiStep<P>::ProcessAll(const TaggedNode* nodes, size_t count, int team) {
  GRAPHI_DCHECK(count > 0);
  // Steps that this step's kernels start (function calls) share its place.
  ScopedStepOrder running(step_order_);
  OpKernelContext::Params params;
  FillStepParams(&params);
  params.device = placement_.DeviceForTeam(team);
  Scratch scratch;
  scratch.wide = placement_.SharingDevice(team);
  InlineQueue inline_ready;
  for (size_t i = 0; i < count; ++i) inline_ready.push_back(nodes[i]);
  const int64_t threshold_ns = executor_->inline_threshold_ns();
  bool completed = false;
  while (!inline_ready.empty()) {
    std::optional<TaggedNode> hand_out;
    const TaggedNode tagged = inline_ready.Pop(*executor_, threshold_ns, &hand_out);
    if (hand_out.has_value()) Dispatch(*hand_out);
    completed = ProcessNode(tagged, team, &params, &scratch, &inline_ready);
  }
  if (completed) ScheduleFinish();
}

template <class P>
bool GraphiStep<P>::ProcessNode(const TaggedNode& tagged, int team,
                                OpKernelContext::Params* params, Scratch* scratch,
                                InlineQueue* inline_ready) {
  const NodeItem& item = tagged.get_node_item();
  Entry* first_input = propagator_.GetInputTensors(tagged);
  scratch->ready.clear();
  if (TF_PREDICT_FALSE(aborted_.load(std::memory_order_relaxed))) {
    return ProcessSkipped(item, first_input, scratch, inline_ready);
  }
  NodeExecStatsInterface* stats = StartStats(tagged, params);
  propagator_.MaybeMarkStarted(tagged);
  absl::Status s;
  if (tagged.get_is_dead() && !item.is_transfer_node) {
    ProcessDead(item, &scratch->outputs);
  } else if (TF_PREDICT_FALSE(item.is_noop)) {
    ProcessNoop(stats);
  } else if (item.const_tensor != nullptr && !params->track_allocations) {
    ProcessConstTensor(item, stats, &scratch->outputs);
  } else {
    bool launched_async = false;
    s = ProcessKernel(tagged, first_input, team, stats, params, scratch, &launched_async);
    if (launched_async) return false;  // AsyncDone completes the node
  }
  return CompleteNode(tagged, first_input, s, stats, scratch, inline_ready);
}

template <class P>
bool GraphiStep<P>::ProcessSkipped(const NodeItem& item, Entry* first_input, Scratch* scratch,
                                   InlineQueue* inline_ready) {
  for (int i = 0; i < item.num_inputs; ++i) (first_input + i)->ClearVal();
  return NodeDone(absl::OkStatus(), &scratch->ready, nullptr, inline_ready);
}

template <class P>
void GraphiStep<P>::ProcessDead(const NodeItem& item, tensorflow::EntryVector* outputs) {
  if (outputs->size() < static_cast<size_t>(item.num_outputs)) outputs->resize(item.num_outputs);
}

template <class P>
void GraphiStep<P>::ProcessNoop(NodeExecStatsInterface* stats) {
  if (stats != nullptr) {
    stats->RecordComputeStarted();
    stats->RecordComputeEnded();
  }
}

template <class P>
void GraphiStep<P>::ProcessConstTensor(const NodeItem& item, NodeExecStatsInterface* stats,
                                       tensorflow::EntryVector* outputs) {
  if (stats != nullptr) {
    stats->RecordComputeStarted();
    stats->RecordComputeEnded();
  }
  outputs->resize(item.num_outputs);
  (*outputs)[0].state = Entry::State::HAS_CONST_TENSOR;
  (*outputs)[0].const_tensor = item.const_tensor;
  (*outputs)[0].alloc_attr = item.output_attrs()[0];
}

template <class P>
absl::Status GraphiStep<P>::ProcessKernel(const TaggedNode& tagged, Entry* first_input, int team,
                                          NodeExecStatsInterface* stats,
                                          OpKernelContext::Params* params, Scratch* scratch,
                                          bool* launched_async) {
  const NodeItem& item = tagged.get_node_item();
  bool is_input_dead = false;
  scratch->inputs.resize(item.num_inputs);
  scratch->input_alloc_attrs.resize(item.num_inputs);
  TF_RETURN_IF_ERROR(PrepareInputs(item, first_input, &scratch->inputs,
                                   &scratch->input_alloc_attrs, &is_input_dead));
  params->op_kernel = item.kernel;
  params->frame_iter = propagator_.GetFrameAndIter(tagged);
  params->is_input_dead = is_input_dead;
  params->output_attr_array = item.output_attrs();
  params->forward_from_array = item.forward_from();
  params->outputs_required_array = item.outputs_required.get();
  params->inputs = scratch->inputs;
  params->input_alloc_attrs = scratch->input_alloc_attrs;
  if (item.kernel_is_async) {
    *launched_async = true;
    ProcessAsync(item, *params, tagged, first_input, stats, team);
    return absl::OkStatus();
  }
  return ProcessSync(item, params, &scratch->outputs, stats, team, scratch->wide);
}

template <class P>
Device* GraphiStep<P>::RunDevice(const NodeItem& item, Device* device, Device* wide, int team) {
  // An op started while another team's leader is idle (or, opted in with
  // GRAPHI_SHARE_ALWAYS_NS, a long one) runs on its team's work-conserving
  // pool, split into blocks for every core, and idle leaders take blocks
  // until they are handed ops. Other ops started while every other team is
  // busy stay on their team's own pool: more blocks would queue on its own
  // cores.
  if (wide == nullptr) return device;
  return executor_->WorthSharing(item, placement_.IdleTeamOtherThan(team)) ? wide : device;
}

template <class P>
absl::Status GraphiStep<P>::ProcessSync(const NodeItem& item, OpKernelContext::Params* params,
                                        tensorflow::EntryVector* outputs,
                                        NodeExecStatsInterface* stats, int team, Device* wide) {
  // Process() set it, from StepPlacement::DeviceForTeam.
  Device* const device = static_cast<Device*>(params->device);
  Device* const run_device = RunDevice(item, device, wide, team);
  params->device = run_device;
  absl::Status s;
  {
    OpKernelContext ctx(params, item.num_outputs);
    if (stats != nullptr) stats->RecordComputeStarted();
    const bool timed = !observers_.empty();
    const int64_t start = timed ? MonotonicNowNs() : 0;
    run_device->Compute(item.kernel, &ctx);
    if (timed) NotifyObservers(item.node_id, team, run_device != device, start, MonotonicNowNs());
    if (stats != nullptr) stats->RecordComputeEnded();
    if (outputs->size() < static_cast<size_t>(item.num_outputs)) outputs->resize(item.num_outputs);
    s = ProcessOutputs(item, &ctx, outputs->data(), stats, args_.stats_collector,
                       args_.log_memory);
    if (stats != nullptr) stats->SetMemory(&ctx);
  }
  params->device = device;
  return s;
}

template <class P>
void GraphiStep<P>::ProcessAsync(const NodeItem& item, const OpKernelContext::Params& params,
                                 const TaggedNode& tagged, Entry* first_input,
                                 NodeExecStatsInterface* stats, int team) {
  Device* device = static_cast<Device*>(params.device);  // as in ProcessSync
  AsyncState* state = new AsyncState(params, tagged, &item, first_input, stats);
  const int64_t start = observers_.empty() ? 0 : MonotonicNowNs();
  if (stats != nullptr) stats->RecordComputeStarted();
  device->ComputeAsync(item.kernel->AsAsync(), &state->ctx,
                       [this, state, start, team]() { AsyncDone(state, start, team); });
}

template <class P>
void GraphiStep<P>::AsyncDone(AsyncState* state, int64_t start_ns, int team) {
  // Any thread may get here; what it starts (a loop's next iteration from
  // `done`) belongs to this step, as in ProcessAll.
  ScopedStepOrder running(step_order_);
  const NodeItem& item = *state->item;
  if (!observers_.empty()) {
    NotifyObservers(item.node_id, team, /*shared=*/false, start_ns, MonotonicNowNs());
  }
  if (state->stats != nullptr) state->stats->RecordComputeEnded();
  tensorflow::EntryVector outputs(item.num_outputs);
  absl::Status s = ProcessOutputs(item, &state->ctx, outputs.data(), state->stats,
                                  args_.stats_collector, args_.log_memory);
  if (state->stats != nullptr) state->stats->SetMemory(&state->ctx);
  for (int i = 0; i < item.num_inputs; ++i) (state->first_input + i)->ClearVal();
  propagator_.MaybeMarkCompleted(state->tagged);
  TaggedNodeSeq ready;
  if (s.ok()) propagator_.PropagateOutputs(state->tagged, &outputs, &ready);
  outputs.clear();
  // Successors go to the scheduler (or the caller's queue): this may be any
  // thread, e.g. the one that sent the tensor a _Recv waited for.
  const bool completed = NodeDone(s, &ready, state->stats, nullptr);
  delete state;
  if (completed) ScheduleFinish();
}

template <class P>
NodeExecStatsInterface* GraphiStep<P>::StartStats(const TaggedNode& tagged,
                                                  OpKernelContext::Params* params) {
  params->track_allocations = false;
  if (args_.stats_collector == nullptr || tagged.get_is_dead()) return nullptr;
  NodeExecStatsInterface* stats =
      args_.stats_collector->CreateNodeExecStats(&tagged.get_node_item().kernel->def());
  if (stats == nullptr) return nullptr;
  params->track_allocations = stats->TrackAllocations();
  stats->SetScheduled(tensorflow::EnvTime::NowNanos());
  stats->RecordExecutorStarted();
  return stats;
}

template <class P>
bool GraphiStep<P>::CompleteNode(const TaggedNode& tagged, Entry* first_input,
                                 const absl::Status& s, NodeExecStatsInterface* stats,
                                 Scratch* scratch, InlineQueue* inline_ready) {
  const NodeItem& item = tagged.get_node_item();
  for (int i = 0; i < item.num_inputs; ++i) (first_input + i)->ClearVal();
  propagator_.MaybeMarkCompleted(tagged);
  tensorflow::EntryVector& outputs = scratch->outputs;
  if (s.ok()) propagator_.PropagateOutputs(tagged, &outputs, &scratch->ready);
  for (int i = 0; i < item.num_outputs && i < static_cast<int>(outputs.size()); ++i) {
    outputs[i].ClearVal();
  }
  return NodeDone(s, &scratch->ready, stats, inline_ready);
}

template <class P>
void GraphiStep<P>::FillStepParams(OpKernelContext::Params* params) {
  params->step_id = args_.step_id;
  params->start_time_usecs = args_.start_time_usecs;
  params->deadline = args_.deadline;
  params->rendezvous = args_.rendezvous;
  params->collective_executor = args_.collective_executor;
  params->session_config = args_.session_config;
  params->session_state = args_.session_state;
  params->session_handle = args_.session_handle;
  params->session_metadata = immutable_.params().session_metadata;
  params->tensor_store = args_.tensor_store;
  params->cancellation_manager = args_.cancellation_manager;
  params->coordination_service_agent = args_.coordination_service_agent;
  params->stack_trace = args_.stack_trace;
  params->call_frame = args_.call_frame;
  params->function_library = immutable_.params().function_library;
  params->resource_manager = immutable_.params().device->resource_manager();
  params->step_container = args_.step_container;
  params->slice_reader_cache = slice_reader_cache_;
  params->runner = &args_.runner;
  params->run_all_kernels_inline = args_.run_all_kernels_inline;
  params->stats_collector = args_.stats_collector;
  params->log_memory = args_.log_memory;
  params->executor_type = ExecutorTypeForKernels();
  params->op_device_context = device_context_;
  params->inc_num_deferred_ops_function = [this]() { IncDeferredOps(); };
  params->dec_num_deferred_ops_function = [this]() { DecDeferredOps(); };
}

template <class P>
void GraphiStep<P>::NotifyObservers(int node_id, int team, bool shared, int64_t start_ns,
                                    int64_t end_ns) {
  for (ExecutionObserver* o : observers_) {
    o->OnNodeExecuted(node_id, team, shared, start_ns, end_ns);
  }
}

template <class P>
bool GraphiStep<P>::NodeDone(const absl::Status& s, TaggedNodeSeq* ready,
                             NodeExecStatsInterface* stats, InlineQueue* inline_ready) {
  if (stats != nullptr) {
    stats->RecordExecutorEnded();
    stats->Done(immutable_.params().device->name());
  }
  if (TF_PREDICT_TRUE(s.ok())) {
    const size_t n = ready->size();
    if (n > 1) num_outstanding_ops_.fetch_add(static_cast<int>(n - 1));
    if (n > 0) {
      ScheduleReady(ready, inline_ready);
      return false;
    }
  } else {
    absl::Status cancel_with;
    if (RecordFirstError(s, &cancel_with)) StartAbort(s, cancel_with);
  }
  const int before = num_outstanding_ops_.fetch_sub(1);
  GRAPHI_DCHECK(before > 0);  // every node done was counted as outstanding
  return before == 1;
}

template <class P>
bool GraphiStep<P>::RecordFirstError(const absl::Status& s, absl::Status* cancel_with) {
  MutexLock l(&mu_);
  if (!status_.ok()) return false;
  // Cancelled/Aborted errors after a cancellation are consequences, not the
  // cause: mark them derived so the root cause is reported.
  tensorflow::CancellationManager* cm = args_.cancellation_manager;
  if (cm != nullptr && cm->IsCancelled() && (absl::IsCancelled(s) || absl::IsAborted(s))) {
    status_ = tensorflow::StatusGroup::MakeDerived(s);
  } else {
    status_ = s;
  }
  *cancel_with = status_;
  return true;
}

template <class P>
void GraphiStep<P>::StartAbort(const absl::Status& s, const absl::Status& cancel_with) {
  aborted_.store(true, std::memory_order_relaxed);
  if (args_.rendezvous != nullptr) args_.rendezvous->StartAbort(s);
  if (args_.cancellation_manager != nullptr) {
    args_.cancellation_manager->StartCancelWithStatus(cancel_with);
  } else if (args_.collective_executor != nullptr) {
    args_.collective_executor->StartAbort(s);
  }
}

template <class P>
void GraphiStep<P>::IncDeferredOps() {
  MutexLock l(&deferred_mu_);
  ++num_deferred_ops_;
}

template <class P>
void GraphiStep<P>::DecDeferredOps() {
  bool finish = false;
  {
    MutexLock l(&deferred_mu_);
    GRAPHI_DCHECK(num_deferred_ops_ > 0);
    --num_deferred_ops_;
    finish = num_deferred_ops_ == 0 && finish_when_deferred_ops_done_;
  }
  if (finish) Finish();
}

template <class P>
void GraphiStep<P>::ScheduleFinish() {
  {
    MutexLock l(&deferred_mu_);
    if (num_deferred_ops_ > 0) {
      finish_when_deferred_ops_done_ = true;
      return;
    }
  }
  Finish();
}

template <class P>
absl::Status GraphiStep<P>::FinalStatus() {
  absl::Status status;
  {
    MutexLock l(&mu_);
    status = status_;
  }
  Device* device = immutable_.params().device;
  if (!device->AllowsSyncOnCompletion()) {
    status.Update(device->RefreshStatus());
    if (!status.ok()) StartAbort(status, status);
  } else if (args_.sync_on_finish && status.ok()) {
    status = device->Sync();
  }
  return status;
}

template <class P>
void GraphiStep<P>::Finish() {
  const absl::Status status = FinalStatus();
  GraphProfile& profile = executor_->profile();
  profile.StepFinished();
  if (timeline_ != nullptr) profile.recorder().Keep(timeline_->Take(), profile.steps_run());
  executor_->EndStep(step_clock_, status.ok());
  tensorflow::Executor::DoneCallback done = std::move(done_);
  CallerQueue* caller_queue = placement_.caller_queue();
  // The step, and possibly the executor and everything in Args, may be
  // destroyed by `done`: touch nothing after it.
  delete this;
  if (caller_queue != nullptr) {
    caller_queue->Finish(status);  // caller-driven steps have no `done`
  } else {
    done(status);
  }
}

// The propagators: SimplePropagatorState for graphs without v1 control
// flow, PropagatorState (frames, iterations, dead tensors) otherwise, and
// OrderedPropagatorState under TF_DETERMINISTIC_ORDER=1.
template class GraphiStep<tensorflow::PropagatorState>;
template class GraphiStep<tensorflow::SimplePropagatorState>;
template class GraphiStep<tensorflow::OrderedPropagatorState>;

template <class P>
struct PropagatorTag {
  using type = P;
};

// Calls `f(PropagatorTag<P>{})` with the propagator a step of `executor` uses,
// chosen as executor.cc's ExecutorImpl::RunAsyncInternal chooses it:
// TF_DETERMINISTIC_ORDER=1 (tensorflow::OpOrderDeterminismRequired, read
// once per process by TensorFlow) selects OrderedPropagatorState for every
// graph, whose inline ready queue runs the nodes a thread made ready in a
// fixed order (highest node id, frame id, iteration first) instead of the
// order the propagator found them. Ops handed to other threads are not
// ordered, in the stock executor neither.
template <class F>
void WithPropagator(const StepPlan& executor, F&& f) {
  if (tensorflow::OpOrderDeterminismRequired()) {
    f(PropagatorTag<tensorflow::OrderedPropagatorState>{});
  } else if (executor.immutable_state().requires_control_flow_support()) {
    f(PropagatorTag<tensorflow::PropagatorState>{});
  } else {
    f(PropagatorTag<tensorflow::SimplePropagatorState>{});
  }
}

}  // namespace

void StartDispatchedStep(const tensorflow::Executor::Args& args, const StepPlan* executor,
                         std::shared_ptr<const TeamDevices> devices,
                         tensorflow::Executor::DoneCallback done) {
  WithPropagator(*executor, [&](auto tag) {
    using P = typename decltype(tag)::type;
    (new GraphiStep<P>(args, executor, std::move(devices), nullptr))->Start(std::move(done));
  });
}

absl::Status RunCallerDrivenStep(const tensorflow::Executor::Args& args,
                                 const StepPlan* executor,
                                 std::shared_ptr<const TeamDevices> devices) {
  CallerQueue queue;
  WithPropagator(*executor, [&](auto tag) {
    using P = typename decltype(tag)::type;
    (new GraphiStep<P>(args, executor, std::move(devices), &queue))->Start(nullptr);
  });
  return queue.Drain();
}

}  // namespace graphi
