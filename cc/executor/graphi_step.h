// GraphiStep: the state of one run of a GraphiExecutor.
//
// Follows TensorFlow's executor contract (see docs/design.md):
//   * every Entry (an edge's tensor) is written once by its producer and
//     cleared by its consumer right after the consumer's kernel returns; the
//     propagator moves a tensor on its last out-edge, so refcounts stay at 1
//     and kernels can forward input buffers in place;
//   * the first error wins: it aborts the rendezvous and cancels the step
//     (or aborts the collective executor); ops not yet started are skipped,
//     ops in flight drain, and `done` is called exactly once, last;
//   * kernels may defer work (inc/dec_num_deferred_ops); the step finishes
//     only when those are done too.
//
// Where ready ops go: in a dispatched step, cheap ops are run inline by the
// thread that made them ready, one expensive op is kept by that thread when
// it has nothing else to do, and the rest are handed to the Scheduler. In a
// caller-driven step (CallerQueue set) everything runs on the calling thread;
// ops that become ready on other threads (async kernels completing) are
// pushed to the CallerQueue.
//
// Thread-safety: any number of threads may Process() nodes of one step
// concurrently; shared fields are atomics or guarded by `mu_`. The step
// deletes itself before calling `done`.
#ifndef GRAPHI_TF_CC_EXECUTOR_GRAPHI_STEP_H_
#define GRAPHI_TF_CC_EXECUTOR_GRAPHI_STEP_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "cc/executor/graphi_executor.h"
#include "cc/executor/scheduler.h"
#include "cc/executor/team_devices.h"
#include "cc/profiler/execution_observer.h"
#include "cc/profiler/timeline_recorder.h"
#include "tensorflow/core/common_runtime/entry.h"
#include "tensorflow/core/common_runtime/renamed_device.h"
#include "tensorflow/core/common_runtime/step_stats_collector.h"
#include "tensorflow/core/framework/cancellation.h"
#include "tensorflow/core/framework/collective.h"
#include "tensorflow/core/framework/log_memory.h"
#include "tensorflow/core/framework/node_def_util.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/rendezvous.h"
#include "tensorflow/core/lib/core/errors.h"
#include "tensorflow/core/lib/core/status.h"
#include "tensorflow/core/util/tensor_slice_reader_cache.h"

namespace graphi {

// Work queue of a caller-driven step. Owned by the caller, outlives the step.
class CallerQueue {
 public:
  void Push(std::function<void()> work) {
    std::lock_guard<std::mutex> l(mu_);
    work_.push_back(std::move(work));
    cv_.notify_one();
  }
  void Finish(const absl::Status& status) {
    std::lock_guard<std::mutex> l(mu_);
    status_ = status;
    finished_ = true;
    cv_.notify_one();
  }
  // Runs queued work on the calling thread until the step finishes.
  absl::Status Drain() {
    std::unique_lock<std::mutex> l(mu_);
    for (;;) {
      cv_.wait(l, [&] { return finished_ || !work_.empty(); });
      if (!work_.empty()) {
        std::function<void()> work = std::move(work_.front());
        work_.pop_front();
        l.unlock();
        work();
        work = nullptr;
        l.lock();
        continue;
      }
      return status_;  // finished and nothing left
    }
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> work_;
  bool finished_ = false;
  absl::Status status_;
};

inline int64_t GraphiNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

template <class PropagatorStateType>
class GraphiStep {
 public:
  using TaggedNode = typename PropagatorStateType::TaggedNode;
  using TaggedNodeSeq = typename PropagatorStateType::TaggedNodeSeq;
  using TaggedNodeReadyQueue = typename PropagatorStateType::TaggedNodeReadyQueue;

  // `devices` is null for a caller-driven step off our worker threads.
  // `caller_queue` is non-null for a caller-driven step.
  GraphiStep(const tensorflow::Executor::Args& args, GraphiExecutor* executor,
             std::shared_ptr<const TeamDevices> devices, CallerQueue* caller_queue)
      : executor_(executor),
        immutable_(executor->immutable_state()),
        propagator_(immutable_, args.step_id, /*vlog=*/false),
        devices_(std::move(devices)),
        caller_queue_(caller_queue),
        step_id_(args.step_id),
        start_time_usecs_(args.start_time_usecs),
        deadline_(args.deadline),
        rendezvous_(args.rendezvous),
        collective_executor_(args.collective_executor),
        session_state_(args.session_state),
        session_handle_(args.session_handle),
        session_config_(args.session_config),
        tensor_store_(args.tensor_store),
        step_container_(args.step_container),
        stats_collector_(args.stats_collector),
        call_frame_(args.call_frame),
        cancellation_manager_(args.cancellation_manager),
        coordination_service_agent_(args.coordination_service_agent),
        stack_trace_(args.stack_trace),
        runner_(args.runner),
        run_all_kernels_inline_(args.run_all_kernels_inline),
        sync_on_finish_(args.sync_on_finish),
        log_memory_(tensorflow::LogMemory::IsEnabled()),
        step_clock_(executor->BeginStep()) {
    tensorflow::Device* base = immutable_.params().device;
    if (args.user_intra_op_threadpool != nullptr) {
      // The caller supplied the intra-op pool for this step: every kernel of
      // the step uses it, whichever team runs the kernel.
      user_pool_device_ = tensorflow::RenamedDevice::NewRenamedDevice(
          base->name(), base, /*owns_underlying=*/false,
          /*isolate_session_state=*/false, args.user_intra_op_threadpool);
    }
    if (!runner_) {
      runner_ = [](std::function<void()> fn) { fn(); };
    }
    use_ranks_ = devices_ != nullptr &&
                 devices_->teams()->scheduler().policy() == ReadyPolicy::kCriticalPathFirst;
    if (executor->profiling()) observers_.push_back(&executor->profile().costs());
    if (executor->profile().TakeRecordRequest()) {
      timeline_ = std::make_unique<TimelineRecorder>(
          devices_ == nullptr ? 0 : devices_->teams()->num_teams());
      observers_.push_back(timeline_.get());
    }
  }

  ~GraphiStep() {
    if (device_context_ != nullptr) device_context_->Unref();
    delete slice_reader_cache_;
  }

  // Activates the roots and hands them out. Calls `done` (possibly before
  // returning) exactly once; a caller-driven step passes no `done` and learns
  // the outcome from its CallerQueue.
  void Start(tensorflow::Executor::DoneCallback done) {
    done_ = std::move(done);
    tensorflow::Device* device = immutable_.params().device;
    absl::Status s = device->TryGetDeviceContext(&device_context_);
    if (!s.ok()) {
      {
        std::lock_guard<std::mutex> l(mu_);
        status_ = s;
      }
      Finish();  // reports `s` to the caller's queue or `done`
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

 private:
  struct AsyncState;

  int CurrentTeam() const {
    if (devices_ == nullptr) return -1;
    if (Scheduler::Current() != &devices_->teams()->scheduler()) return -1;
    return Scheduler::CurrentTeam();
  }

  tensorflow::Device* DeviceForTeam(int team) const {
    if (user_pool_device_ != nullptr) return user_pool_device_.get();
    if (devices_ == nullptr) return immutable_.params().device;
    return devices_->device(team);
  }

  // The node's priority: its upward rank under critical_path_first, 0 under
  // fifo (so neither the queue nor the inline choice reorders by rank).
  int64_t Rank(const tensorflow::NodeItem& item) const {
    return use_ranks_ ? executor_->Rank(item) : 0;
  }

  // Hands `tagged` to another thread: the caller's queue or the Scheduler.
  void Dispatch(const TaggedNode& tagged) {
    if (caller_queue_ != nullptr) {
      caller_queue_->Push([this, tagged] { Process(tagged, CurrentTeam()); });
      return;
    }
    ReadyTask task;
    task.rank = Rank(tagged.get_node_item());
    task.run = [this, tagged](int team) { Process(tagged, team); };
    devices_->teams()->scheduler().Submit(std::move(task));
  }

  void ScheduleReady(TaggedNodeSeq* ready, TaggedNodeReadyQueue* inline_ready) {
    if (ready->empty()) return;
    if (inline_ready == nullptr) {
      for (const TaggedNode& t : *ready) Dispatch(t);
      return;
    }
    if (caller_queue_ != nullptr || run_all_kernels_inline_) {
      for (const TaggedNode& t : *ready) inline_ready->push_back(t);
      return;
    }
    const TaggedNode* keep = nullptr;
    for (const TaggedNode& t : *ready) {
      const tensorflow::NodeItem& item = t.get_node_item();
      if (t.get_is_dead() || executor_->IsCheap(item)) {
        inline_ready->push_back(t);
      } else if (keep == nullptr ||
                 Rank(item) > Rank(keep->get_node_item())) {
        if (keep != nullptr) Dispatch(*keep);
        keep = &t;
      } else {
        Dispatch(t);
      }
    }
    if (keep != nullptr) {
      // Keep one expensive op on this thread when it would otherwise idle:
      // it saves a hand-off and reuses the inputs still in this core's cache.
      if (inline_ready->empty()) {
        inline_ready->push_back(*keep);
      } else {
        Dispatch(*keep);
      }
    }
  }

  void FillStepParams(tensorflow::OpKernelContext::Params* params) {
    params->step_id = step_id_;
    params->start_time_usecs = start_time_usecs_;
    params->deadline = deadline_;
    params->rendezvous = rendezvous_;
    params->collective_executor = collective_executor_;
    params->session_config = session_config_;
    params->session_state = session_state_;
    params->session_handle = session_handle_;
    params->session_metadata = immutable_.params().session_metadata;
    params->tensor_store = tensor_store_;
    params->cancellation_manager = cancellation_manager_;
    params->coordination_service_agent = coordination_service_agent_;
    params->stack_trace = stack_trace_;
    params->call_frame = call_frame_;
    params->function_library = immutable_.params().function_library;
    params->resource_manager = immutable_.params().device->resource_manager();
    params->step_container = step_container_;
    params->slice_reader_cache = slice_reader_cache_;
    params->runner = &runner_;
    params->run_all_kernels_inline = run_all_kernels_inline_;
    params->stats_collector = stats_collector_;
    params->log_memory = log_memory_;
    params->executor_type = GraphiExecutor::ExecutorTypeForKernels();
    params->op_device_context = device_context_;
    params->inc_num_deferred_ops_function = [this]() {
      std::lock_guard<std::mutex> l(deferred_mu_);
      ++num_deferred_ops_;
    };
    params->dec_num_deferred_ops_function = [this]() {
      bool finish = false;
      {
        std::lock_guard<std::mutex> l(deferred_mu_);
        --num_deferred_ops_;
        finish = num_deferred_ops_ == 0 && finish_when_deferred_ops_done_;
      }
      if (finish) Finish();
    };
  }

  // Runs `tagged` and then every node it makes ready inline, on team `team`.
  void Process(TaggedNode tagged, int team) {
    tensorflow::Device* device = DeviceForTeam(team);
    tensorflow::OpKernelContext::Params params;
    FillStepParams(&params);
    params.device = device;

    absl::InlinedVector<tensorflow::TensorValue, 4> inputs;
    absl::InlinedVector<tensorflow::AllocatorAttributes, 4> input_alloc_attrs;
    tensorflow::EntryVector outputs;
    TaggedNodeSeq ready;
    TaggedNodeReadyQueue inline_ready;
    inline_ready.push_back(tagged);
    bool completed = false;

    while (!inline_ready.empty()) {
      tagged = inline_ready.front();
      inline_ready.pop_front();
      const tensorflow::NodeItem& item = tagged.get_node_item();
      const int num_inputs = item.num_inputs;
      tensorflow::Entry* first_input = propagator_.GetInputTensors(tagged);
      ready.clear();

      if (TF_PREDICT_FALSE(aborted_.load(std::memory_order_relaxed))) {
        // The step already failed: skip the kernel, release the inputs and
        // let the outstanding count drain.
        for (int i = 0; i < num_inputs; ++i) (first_input + i)->ClearVal();
        completed = NodeDone(absl::OkStatus(), &ready, nullptr, &inline_ready);
        continue;
      }

      tensorflow::NodeExecStatsInterface* stats = nullptr;
      if (stats_collector_ != nullptr && !tagged.get_is_dead()) {
        stats = stats_collector_->CreateNodeExecStats(&item.kernel->def());
        params.track_allocations = stats != nullptr && stats->TrackAllocations();
        if (stats != nullptr) {
          stats->SetScheduled(tensorflow::EnvTime::NowNanos());
          stats->RecordExecutorStarted();
        }
      } else {
        params.track_allocations = false;
      }
      propagator_.MaybeMarkStarted(tagged);

      absl::Status s;
      bool launched_async = false;
      if (tagged.get_is_dead() && !item.is_transfer_node) {
        // A dead node runs no kernel; its outputs stay dead.
        if (outputs.size() < static_cast<size_t>(item.num_outputs)) {
          outputs.resize(item.num_outputs);
        }
      } else if (TF_PREDICT_FALSE(item.is_noop)) {
        if (stats != nullptr) {
          stats->RecordComputeStarted();
          stats->RecordComputeEnded();
        }
      } else if (item.const_tensor != nullptr && !params.track_allocations) {
        // Constants hand out their (never forwarded) tensor directly.
        if (stats != nullptr) {
          stats->RecordComputeStarted();
          stats->RecordComputeEnded();
        }
        outputs.resize(item.num_outputs);
        outputs[0].state = tensorflow::Entry::State::HAS_CONST_TENSOR;
        outputs[0].const_tensor = item.const_tensor;
        outputs[0].alloc_attr = item.output_attrs()[0];
      } else {
        bool is_input_dead = false;
        inputs.resize(num_inputs);
        input_alloc_attrs.resize(num_inputs);
        s = PrepareInputs(item, first_input, &inputs, &input_alloc_attrs, &is_input_dead);
        if (!s.ok()) {
          for (int i = 0; i < num_inputs; ++i) (first_input + i)->ClearVal();
          propagator_.MaybeMarkCompleted(tagged);
          completed = NodeDone(s, &ready, stats, &inline_ready);
          continue;
        }
        params.op_kernel = item.kernel;
        params.frame_iter = propagator_.GetFrameAndIter(tagged);
        params.is_input_dead = is_input_dead;
        params.output_attr_array = item.output_attrs();
        params.forward_from_array = item.forward_from();
        params.outputs_required_array = item.outputs_required.get();
        params.inputs = inputs;
        params.input_alloc_attrs = input_alloc_attrs;

        if (item.kernel_is_async) {
          launched_async = true;
          ProcessAsync(item, params, tagged, first_input, stats, device, team);
        } else {
          s = ProcessSync(item, &params, &outputs, stats, device, team);
        }
      }

      if (!launched_async) {
        for (int i = 0; i < num_inputs; ++i) (first_input + i)->ClearVal();
        propagator_.MaybeMarkCompleted(tagged);
        if (s.ok()) propagator_.PropagateOutputs(tagged, &outputs, &ready);
        for (int i = 0; i < item.num_outputs && i < static_cast<int>(outputs.size()); ++i) {
          outputs[i].ClearVal();
        }
        completed = NodeDone(s, &ready, stats, &inline_ready);
      }
    }
    if (completed) ScheduleFinish();
  }

  void NotifyObservers(int node_id, int team, bool merged, int64_t start_ns, int64_t end_ns) {
    for (ExecutionObserver* o : observers_) {
      o->OnNodeExecuted(node_id, team, merged, start_ns, end_ns);
    }
  }

  absl::Status ProcessSync(const tensorflow::NodeItem& item,
                           tensorflow::OpKernelContext::Params* params,
                           tensorflow::EntryVector* outputs,
                           tensorflow::NodeExecStatsInterface* stats,
                           tensorflow::Device* device, int team) {
    tensorflow::Device* run_device =
        ShareWithIdleTeams(item, team) ? devices_->wide_device(team) : device;
    params->device = run_device;
    absl::Status s;
    {
      tensorflow::OpKernelContext ctx(params, item.num_outputs);
      if (stats != nullptr) stats->RecordComputeStarted();
      const bool timed = !observers_.empty();
      const int64_t start = timed ? GraphiNowNs() : 0;
      run_device->Compute(item.kernel, &ctx);
      if (timed) NotifyObservers(item.node_id, team, /*merged=*/false, start, GraphiNowNs());
      if (stats != nullptr) stats->RecordComputeEnded();
      if (outputs->size() < static_cast<size_t>(item.num_outputs)) {
        outputs->resize(item.num_outputs);
      }
      s = ProcessOutputs(item, &ctx, outputs->data(), stats);
      if (stats != nullptr) stats->SetMemory(&ctx);
    }
    params->device = device;
    return s;
  }

  // Work conservation: an op started while another team's leader is idle,
  // or a long one (GRAPHI_SHARE_ALWAYS_NS), runs on its team's
  // work-conserving pool, split into blocks for every core, and idle leaders
  // take blocks until they are handed ops. Short ops started while every
  // other team is busy stay on their team's own pool: more blocks would only
  // queue on the team's own cores.
  bool ShareWithIdleTeams(const tensorflow::NodeItem& item, int team) {
    if (devices_ == nullptr || devices_->wide_device(0) == nullptr || team < 0 ||
        caller_queue_ != nullptr || run_all_kernels_inline_ || user_pool_device_ != nullptr) {
      return false;
    }
    Scheduler& scheduler = devices_->teams()->scheduler();
    return Scheduler::Current() == &scheduler &&
           executor_->WorthSharing(item, scheduler.IdleThiefFor(team));
  }

  void ProcessAsync(const tensorflow::NodeItem& item,
                    const tensorflow::OpKernelContext::Params& params,
                    const TaggedNode& tagged, tensorflow::Entry* first_input,
                    tensorflow::NodeExecStatsInterface* stats,
                    tensorflow::Device* device, int team) {
    tensorflow::AsyncOpKernel* kernel = item.kernel->AsAsync();
    AsyncState* state = new AsyncState(params, tagged, &item, first_input, stats);
    const int64_t start = observers_.empty() ? 0 : GraphiNowNs();
    auto done = [this, state, start, team]() {
      const tensorflow::NodeItem& item = *state->item;
      if (!observers_.empty()) NotifyObservers(item.node_id, team, /*merged=*/false, start, GraphiNowNs());
      if (state->stats != nullptr) state->stats->RecordComputeEnded();
      tensorflow::EntryVector outputs(item.num_outputs);
      absl::Status s = ProcessOutputs(item, &state->ctx, outputs.data(), state->stats);
      if (state->stats != nullptr) state->stats->SetMemory(&state->ctx);
      for (int i = 0; i < item.num_inputs; ++i) (state->first_input + i)->ClearVal();
      propagator_.MaybeMarkCompleted(state->tagged);
      TaggedNodeSeq ready;
      if (s.ok()) propagator_.PropagateOutputs(state->tagged, &outputs, &ready);
      outputs.clear();
      // Successors go to the scheduler (or the caller's queue): this may be
      // any thread, e.g. the one that sent the tensor a _Recv waited for.
      const bool completed = NodeDone(s, &ready, state->stats, nullptr);
      delete state;
      if (completed) ScheduleFinish();
    };
    if (stats != nullptr) stats->RecordComputeStarted();
    device->ComputeAsync(kernel, &state->ctx, std::move(done));
  }

  absl::Status PrepareInputs(const tensorflow::NodeItem& item, tensorflow::Entry* first_input,
                             absl::InlinedVector<tensorflow::TensorValue, 4>* inputs,
                             absl::InlinedVector<tensorflow::AllocatorAttributes, 4>* attrs,
                             bool* is_input_dead) {
    using tensorflow::Entry;
    for (int i = 0; i < item.num_inputs; ++i) {
      const bool expect_ref =
          TF_PREDICT_FALSE(item.is_any_input_ref_typed) &&
          tensorflow::IsRefType(item.input_type(i));
      Entry* entry = first_input + i;
      (*attrs)[i] = entry->alloc_attr;
      tensorflow::TensorValue* inp = &(*inputs)[i];
      switch (entry->state) {
        case Entry::State::NO_VALUE:
          // Only a Merge (waiting for one live input) or a transfer node
          // (which forwards deadness) may see a missing input.
          inp->mutex_if_ref = nullptr;
          if (item.is_merge) {
            inp->tensor = nullptr;
          } else {
            entry->state = Entry::State::HAS_CONST_TENSOR;
            entry->const_tensor = EmptyTensor();
            inp->tensor = const_cast<tensorflow::Tensor*>(EmptyTensor());
            *is_input_dead = true;
          }
          break;
        case Entry::State::HAS_VALUE:
          if (TF_PREDICT_FALSE(expect_ref)) {
            return tensorflow::AttachDef(
                tensorflow::errors::InvalidArgument(i, "-th input expects a ref type"),
                item.kernel->def());
          }
          inp->mutex_if_ref = nullptr;
          inp->tensor = entry->val.get();
          break;
        case Entry::State::HAS_CONST_TENSOR:
          if (TF_PREDICT_FALSE(expect_ref)) {
            return tensorflow::AttachDef(
                tensorflow::errors::InvalidArgument(i, "-th input expects a ref type"),
                item.kernel->def());
          }
          inp->mutex_if_ref = nullptr;
          inp->tensor = const_cast<tensorflow::Tensor*>(entry->const_tensor);
          break;
        case Entry::State::HAS_REF_TENSOR: {
          tensorflow::mutex* ref_mu = entry->ref_tensor.mu;
          tensorflow::Tensor* ref = entry->ref_tensor.tensor;
          {
            tensorflow::tf_shared_lock l(*ref_mu);
            if (TF_PREDICT_FALSE(!ref->IsInitialized() && !item.is_initialization_op)) {
              return tensorflow::AttachDef(
                  tensorflow::errors::FailedPrecondition(
                      "Attempting to use uninitialized value ",
                      item.kernel->requested_input(i)),
                  item.kernel->def());
            }
          }
          if (expect_ref) {
            inp->mutex_if_ref = ref_mu;
            inp->tensor = ref;
          } else {
            // The consumer wants a value: read the referenced tensor once,
            // under its lock, and from then on treat the entry as a value.
            {
              tensorflow::tf_shared_lock l(*ref_mu);
              entry->val.Init(*ref);
            }
            entry->state = Entry::State::HAS_VALUE;
            inp->mutex_if_ref = nullptr;
            inp->tensor = entry->val.get();
            // Another op may have re-assigned the variable with a new dtype
            // since the producer ran.
            if (TF_PREDICT_FALSE(item.input_type(i) != inp->tensor->dtype())) {
              return tensorflow::AttachDef(
                  tensorflow::errors::InvalidArgument(
                      i, "-th input expects type ",
                      tensorflow::DataTypeString(item.input_type(i)),
                      " but automatically dereferenced input tensor has type ",
                      tensorflow::DataTypeString(inp->tensor->dtype())),
                  item.kernel->def());
            }
          }
          break;
        }
      }
    }
    return absl::OkStatus();
  }

  absl::Status ProcessOutputs(const tensorflow::NodeItem& item,
                              tensorflow::OpKernelContext* ctx, tensorflow::Entry* outputs,
                              tensorflow::NodeExecStatsInterface* stats) {
    using tensorflow::Entry;
    absl::Status s = ctx->status();
    if (!s.ok()) {
      s = tensorflow::AttachDef(s, item.kernel->def());
      if (s.code() == absl::StatusCode::kResourceExhausted && stats_collector_ != nullptr) {
        const std::string report = stats_collector_->ReportAllocsOnResourceExhausted(s.message());
        s = absl::Status(s.code(), absl::StrCat(s.message(), report));
      }
      return s;
    }
    for (int i = 0; i < item.num_outputs; ++i) {
      const tensorflow::TensorValue val = ctx->release_output(i);
      Entry* out = outputs + i;
      if (val.tensor == nullptr) {
        if (!(item.is_recv_or_switch ||
              (item.outputs_required && !item.outputs_required[i]))) {
          s.Update(tensorflow::errors::Internal(
              "Missing ", i, "-th output from ",
              tensorflow::FormatNodeDefForError(item.kernel->def())));
        }
        continue;
      }
      out->alloc_attr = ctx->output_alloc_attr(i);
      const tensorflow::DataType dtype = val.dtype_safe();
      if (dtype == item.output_type(i)) {
        if (stats != nullptr && val.tensor->IsInitialized()) stats->SetOutput(i, val.tensor);
        if (val.is_ref()) {
          out->state = Entry::State::HAS_REF_TENSOR;
          out->ref_tensor.tensor = val.tensor;
          out->ref_tensor.mu = val.mutex_if_ref;
          if (log_memory_) {
            tensorflow::Tensor to_log;
            {
              tensorflow::tf_shared_lock l(*out->ref_tensor.mu);
              to_log = *out->ref_tensor.tensor;
            }
            tensorflow::LogMemory::RecordTensorOutput(ctx->op_kernel().name(),
                                                      ctx->step_id(), i, to_log);
          }
        } else {
          out->state = Entry::State::HAS_VALUE;
          out->val.Init(std::move(*val.tensor));
          if (log_memory_) {
            tensorflow::LogMemory::RecordTensorOutput(ctx->op_kernel().name(),
                                                      ctx->step_id(), i, *out->val);
          }
        }
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

  // Accounts for a finished node; returns true when the step has no
  // outstanding ops left.
  bool NodeDone(const absl::Status& s, TaggedNodeSeq* ready,
                tensorflow::NodeExecStatsInterface* stats,
                TaggedNodeReadyQueue* inline_ready) {
    if (stats != nullptr) {
      stats->RecordExecutorEnded();
      stats->Done(immutable_.params().device->name());
    }
    if (TF_PREDICT_TRUE(s.ok())) {
      const size_t n = ready->size();
      if (n == 0) return num_outstanding_ops_.fetch_sub(1) == 1;
      if (n > 1) num_outstanding_ops_.fetch_add(static_cast<int>(n - 1));
      ScheduleReady(ready, inline_ready);
      return false;
    }
    bool first_error = false;
    absl::Status reported = s;
    {
      std::lock_guard<std::mutex> l(mu_);
      if (status_.ok()) {
        first_error = true;
        // Cancelled/Aborted errors after a cancellation are consequences, not
        // the cause: mark them derived so the root cause is reported.
        if (cancellation_manager_ != nullptr && cancellation_manager_->IsCancelled() &&
            (absl::IsCancelled(s) || absl::IsAborted(s))) {
          status_ = tensorflow::StatusGroup::MakeDerived(s);
          reported = status_;
        } else {
          status_ = s;
        }
      }
    }
    if (first_error) {
      aborted_.store(true, std::memory_order_relaxed);
      if (rendezvous_ != nullptr) rendezvous_->StartAbort(s);
      if (cancellation_manager_ != nullptr) {
        cancellation_manager_->StartCancelWithStatus(reported);
      } else if (collective_executor_ != nullptr) {
        collective_executor_->StartAbort(s);
      }
    }
    return num_outstanding_ops_.fetch_sub(1) == 1;
  }

  void ScheduleFinish() {
    {
      std::lock_guard<std::mutex> l(deferred_mu_);
      if (num_deferred_ops_ > 0) {
        finish_when_deferred_ops_done_ = true;
        return;
      }
    }
    Finish();
  }

  void Finish() {
    absl::Status status;
    {
      std::lock_guard<std::mutex> l(mu_);
      status = status_;
    }
    tensorflow::Device* device = immutable_.params().device;
    if (!device->AllowsSyncOnCompletion()) {
      status.Update(device->RefreshStatus());
      if (!status.ok()) {
        if (rendezvous_ != nullptr) rendezvous_->StartAbort(status);
        if (cancellation_manager_ != nullptr) {
          cancellation_manager_->StartCancelWithStatus(status);
        } else if (collective_executor_ != nullptr) {
          collective_executor_->StartAbort(status);
        }
      }
    } else if (sync_on_finish_ && status.ok()) {
      status = device->Sync();
    }
    GraphProfile& profile = executor_->profile();
    profile.StepFinished();
    if (timeline_ != nullptr) profile.SetLastTimeline(timeline_->Take());
    executor_->EndStep(step_clock_, status.ok());
    tensorflow::Executor::DoneCallback done = std::move(done_);
    CallerQueue* caller_queue = caller_queue_;
    // The step, and possibly the executor and everything in Args, may be
    // destroyed by `done`: touch nothing after it.
    delete this;
    if (caller_queue != nullptr) {
      caller_queue->Finish(status);  // caller-driven steps have no `done`
    } else {
      done(status);
    }
  }

  static const tensorflow::Tensor* EmptyTensor() {
    static const tensorflow::Tensor* const empty = new tensorflow::Tensor();
    return empty;
  }

  // Everything an async kernel needs after ComputeAsync returns.
  struct AsyncState {
    AsyncState(const tensorflow::OpKernelContext::Params& p, const TaggedNode& t,
               const tensorflow::NodeItem* i, tensorflow::Entry* first,
               tensorflow::NodeExecStatsInterface* s)
        : saved_inputs(p.inputs.begin(), p.inputs.end()),
          saved_input_alloc_attrs(p.input_alloc_attrs.begin(), p.input_alloc_attrs.end()),
          params(p),
          tagged(t),
          item(i),
          first_input(first),
          ctx(RebindInputs(&params, saved_inputs, saved_input_alloc_attrs), i->num_outputs),
          stats(s) {}

    static tensorflow::OpKernelContext::Params* RebindInputs(
        tensorflow::OpKernelContext::Params* p,
        const absl::InlinedVector<tensorflow::TensorValue, 4>& inputs,
        const absl::InlinedVector<tensorflow::AllocatorAttributes, 4>& attrs) {
      p->inputs = inputs;
      p->input_alloc_attrs = attrs;
      p->eigen_gpu_device = nullptr;  // not shared with the original params
      return p;
    }

    absl::InlinedVector<tensorflow::TensorValue, 4> saved_inputs;
    absl::InlinedVector<tensorflow::AllocatorAttributes, 4> saved_input_alloc_attrs;
    tensorflow::OpKernelContext::Params params;
    TaggedNode tagged;
    const tensorflow::NodeItem* item;
    tensorflow::Entry* first_input;
    tensorflow::OpKernelContext ctx;
    tensorflow::NodeExecStatsInterface* stats;
  };

  GraphiExecutor* const executor_;
  const tensorflow::ImmutableExecutorState& immutable_;
  PropagatorStateType propagator_;
  const std::shared_ptr<const TeamDevices> devices_;
  std::unique_ptr<tensorflow::Device> user_pool_device_;
  CallerQueue* const caller_queue_;
  // Who hears about each kernel run: the cost model while profiling, a
  // timeline recorder when this step was asked to record. Empty: no clock.
  absl::InlinedVector<ExecutionObserver*, 2> observers_;
  std::unique_ptr<TimelineRecorder> timeline_;
  bool use_ranks_ = false;

  const int64_t step_id_;
  const int64_t start_time_usecs_;
  const std::optional<absl::Time> deadline_;
  tensorflow::RendezvousInterface* const rendezvous_;
  tensorflow::CollectiveExecutor* const collective_executor_;
  tensorflow::SessionState* const session_state_;
  const std::string session_handle_;
  const tensorflow::ConfigProto* const session_config_;
  tensorflow::TensorStore* const tensor_store_;
  tensorflow::ScopedStepContainer* const step_container_;
  tensorflow::StepStatsCollectorInterface* const stats_collector_;
  tensorflow::CallFrameInterface* const call_frame_;
  tensorflow::CancellationManager* const cancellation_manager_;
  tsl::CoordinationServiceAgent* const coordination_service_agent_;
  const std::optional<tensorflow::ManagedStackTrace> stack_trace_;
  tensorflow::Executor::Args::Runner runner_;
  const bool run_all_kernels_inline_;
  const bool sync_on_finish_;
  const bool log_memory_;
  const StepClock step_clock_;  // for the autotuner (top-level steps only)

  tensorflow::DeviceContext* device_context_ = nullptr;
  tensorflow::checkpoint::TensorSliceReaderCacheWrapper* slice_reader_cache_ = nullptr;
  tensorflow::Executor::DoneCallback done_;

  std::atomic<int> num_outstanding_ops_{0};
  std::atomic<bool> aborted_{false};

  std::mutex mu_;
  absl::Status status_;  // guarded by mu_

  std::mutex deferred_mu_;
  int num_deferred_ops_ = 0;                   // guarded by deferred_mu_
  bool finish_when_deferred_ops_done_ = false;  // guarded by deferred_mu_
};

}  // namespace graphi

#endif  // GRAPHI_TF_CC_EXECUTOR_GRAPHI_STEP_H_
