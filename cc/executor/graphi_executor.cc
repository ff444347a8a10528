#include "cc/executor/graphi_executor.h"

#include "cc/executor/process_autotuner.h"
#include "cc/executor/runtime.h"
#include "cc/executor/step_plan.h"
#include "cc/platform/env_settings.h"
#include "cc/platform/thread_affinity.h"
#include "cc/profiler/graph_registry.h"
#include "cc/profiler/graph_signature.h"
#include "cc/teams/step_order.h"
#include "cc/util/check.h"
#include "cc/util/clock.h"
#include "absl/container/flat_hash_map.h"
#include "tensorflow/core/framework/attr_value.pb.h"
#include "tensorflow/core/graph/graph.h"

namespace graphi {
namespace {

// Ops measured below this run inline where they become ready: a hand-off to
// another team (lock, wake-up, cold cache) costs more than they do.
constexpr int64_t kDefaultInlineThresholdNs = 20 * 1000;

// Ops measured at or above this run on their team's work-conserving pool
// when another team is idle at their start, so the idle team takes blocks.
// Below about half a millisecond the blocks cost more in hand-offs than they
// save: on the 2-vCPU Xeon, MobileNetV2 at batch 1 (ops of 20-250 us) ran on
// 2x1 8% slower with every op shared than with none, and a tanh of 64 Ki
// floats 33% slower, while GoogLeNet's training step kept its 4% gain from
// sharing (docs/design.md, "Which ops are worth sharing").
constexpr int64_t kDefaultStealThresholdNs = 500 * 1000;

// Whether `node`'s kernel may start a step of a nested executor on the
// thread that runs it: it names a function (a `func` or list(func) attr:
// PartitionedCall, If, While, Case, gradient, dataset and XLA ops), or it
// runs Python, which may call a tf.function.
bool MayStartNestedSteps(const tensorflow::Node& node) {
  const std::string& op = node.type_string();
  if (op == "PyFunc" || op == "PyFuncStateless" || op == "EagerPyFunc") return true;
  for (const auto& [name, value] : node.def().attr()) {
    if (value.has_func() || value.list().func_size() > 0) return true;
  }
  return false;
}

// Off: an op started while every other team is busy stays on its team's own
// pool. Sharing it anyway (GRAPHI_SHARE_ALWAYS_NS=N) lets a team that goes
// idle during the op take its remaining blocks, but until one does, the extra
// blocks queue on the owner's cores. On the 2-vCPU Xeon (model 106) a 1 ms
// rule cost 2x1 19% on the LSTM large step and 8% on GoogLeNet medium, and
// gained nothing on GoogLeNet small (docs/design.md, "Work conservation").
constexpr int64_t kDefaultShareAlwaysNs = kEnvOff;

// Reads the executor's knobs from the environment snapshot the Runtime takes
// when an executor is created (tests set them per session). An invalid value
// is an error naming the variable and its allowed values.
absl::Status ExecutorSettingsFrom(const GraphiEnvironment& env, ExecutorSettings* out) {
  for (const EnvInt* setting : {&env.profile, &env.arrival_order, &env.inline_threshold_ns,
                                &env.steal_threshold_ns, &env.share_always_ns}) {
    if (!setting->ok()) {
      return absl::InvalidArgumentError(absl::StrCat("GRAPHI executor: ", setting->error));
    }
  }
  out->profiling = env.profile.value == 1;
  out->arrival_order = env.arrival_order.value == 1;
  out->inline_threshold_ns = env.inline_threshold_ns.value_or(kDefaultInlineThresholdNs);
  // kEnvOff (-1) reads as "off" in both thresholds.
  out->steal_threshold_ns = env.steal_threshold_ns.value_or(kDefaultStealThresholdNs);
  out->share_always_ns = env.share_always_ns.value_or(kDefaultShareAlwaysNs);
  return absl::OkStatus();
}

// A step or an executor cannot start because the setting is invalid.
absl::Status SettingError(const std::string& error) {
  return absl::InvalidArgumentError(
      absl::StrCat("GRAPHI executor: ", error,
                   ". Fix the setting (environment or graphi_tf.configure) or select "
                   "another executor_type."));
}

}  // namespace

GraphiExecutor::GraphiExecutor(const tensorflow::LocalExecutorParams& params)
    : immutable_state_(params),
      settings_status_(ExecutorSettingsFrom(Runtime::Get().RefreshEnvironment(), &settings_)) {}

GraphiExecutor::~GraphiExecutor() = default;

absl::Status GraphiExecutor::Initialize(const tensorflow::Graph& graph) {
  // Fail at creation, not at the first step, when a setting is invalid.
  TF_RETURN_IF_ERROR(settings_status_);
  TF_RETURN_IF_ERROR(immutable_state_.Initialize(graph));
  // The static graph for the cost model: every data and control edge except
  // loop back edges (out of NextIteration), so ranks are defined on a DAG.
  const tensorflow::GraphView& view = immutable_state_.graph_view();
  const int num_nodes = view.num_nodes();
  std::vector<std::vector<int>> successors(num_nodes);
  std::vector<std::string> names(num_nodes);
  std::vector<std::string> types(num_nodes);
  ops_may_start_nested_steps_ = false;
  for (const tensorflow::Node* node : graph.nodes()) {
    if (node->id() >= num_nodes) continue;
    names[node->id()] = node->name();
    types[node->id()] = node->type_string();
    if (MayStartNestedSteps(*node)) ops_may_start_nested_steps_ = true;
  }
  // Read for every ready node, so a dense array (as the stock executor's
  // KernelStats keeps): a byte in one cache line instead of a load through
  // the NodeItem to the kernel and its vtable.
  std::vector<uint8_t> always_cheap(num_nodes, 0);
  for (int id = 0; id < num_nodes; ++id) {
    const tensorflow::NodeItem* item = view.node(id);
    if (item == nullptr) continue;
    always_cheap[id] = item->const_tensor != nullptr || item->is_noop ||
                        item->kernel == nullptr || !item->kernel->IsExpensive();
    if (item->is_next_iteration) continue;
    for (const tensorflow::EdgeInfo& e : item->output_edges()) successors[id].push_back(e.dst_id);
    for (const tensorflow::ControlEdgeInfo& e : item->output_control_edges()) {
      successors[id].push_back(e.dst_id);
    }
  }
  TF_RETURN_IF_ERROR(BuildStockExecutors(graph));
  profile_ = GraphRegistry::Get().Register(GraphSignature(graph), std::move(names),
                                           std::move(successors), std::move(types));
  StepHooks* hooks = this;  // a private base: converted here, where it is accessible
  plan_ = std::make_unique<const StepPlan>(&immutable_state_, profile_.get(), settings_,
                                           std::move(always_cheap), hooks);
  // Likewise when the team setting in the environment is invalid. The teams
  // start now, before the first step, unless steps run on TensorFlow's
  // executor, which needs none (runtime.h).
  ResolvedSetting resolved;
  TeamLayout layout;
  std::string error;
  if (!Runtime::Get().Describe(&resolved, &layout, &error)) return SettingError(error);
  if (!resolved.setting.stock && Runtime::Get().CurrentTeams(&error) == nullptr) {
    return SettingError(error);
  }
  return absl::OkStatus();
}

absl::Status GraphiExecutor::BuildStockExecutors(const tensorflow::Graph& graph) {
  // TensorFlow's ImmutableExecutorState asks create_kernel for each node's
  // kernel by the node's properties: hand it the kernel ours already holds.
  // Keyed by the NodeDef the properties hold (Node::def(), compiled in
  // TensorFlow), not by Node::properties(): that accessor is inline, and
  // reads the wrong field when this file is compiled without NDEBUG, which
  // changes the layout of Node's EdgeSets (edgeset.h) against the library's.
  const tensorflow::GraphView& view = immutable_state_.graph_view();
  auto kernels = std::make_shared<
      absl::flat_hash_map<const tensorflow::NodeDef*, tensorflow::OpKernel*>>();
  for (const tensorflow::Node* node : graph.nodes()) {
    if (node->id() >= view.num_nodes()) continue;
    const tensorflow::NodeItem* item = view.node(node->id());
    if (item != nullptr && item->kernel != nullptr) (*kernels)[&node->def()] = item->kernel;
  }
  tensorflow::LocalExecutorParams params = immutable_state_.params();
  params.create_kernel = [kernels](const std::shared_ptr<const tensorflow::NodeProperties>& props,
                                   tensorflow::OpKernel** kernel) -> absl::Status {
    auto it = kernels->find(&props->node_def);
    if (it == kernels->end()) {
      return absl::InternalError(absl::StrCat(
          "GRAPHI executor: building TensorFlow's executor for the \"stock\" setting, node '",
          props->node_def.name(),
          "' has no kernel in GRAPHI's executor of the same graph. Please report this; "
          "GRAPHI_EXECUTORS=<n> avoids the stock setting."));
    }
    *kernel = it->second;
    return absl::OkStatus();
  };
  params.delete_kernel = [](tensorflow::OpKernel*) {};  // immutable_state_ owns them
  tensorflow::Executor* executor = nullptr;
  TF_RETURN_IF_ERROR(tensorflow::NewLocalExecutor(params, graph, &executor));
  stock_executor_.reset(executor);
  // The executor's device, but for kernels on a stock point's threads, whose
  // intra-op pool they get (stock_point_device.h). A second executor, not
  // the device for both: forwarding every device call cost plain "stock"
  // about 10% a node on chains of scalar ops (docs/design.md, "Stock points").
  stock_point_device_ = std::make_unique<StockPointDevice>(params.device);
  params.device = stock_point_device_.get();
  TF_RETURN_IF_ERROR(tensorflow::NewLocalExecutor(params, graph, &executor));
  stock_point_executor_.reset(executor);
  kernels->clear();  // only Initialize asks for kernels
  return absl::OkStatus();
}

void GraphiExecutor::RunOnStockExecutor(const Args& args, std::shared_ptr<StockPools> stock_point,
                                        DoneCallback done) {
  const StepClock clock = BeginStep();
  const uint64_t order = StepOrderForNewStep();
  Args stock_args = args;
  const IntraOpPoolView* intra_op = nullptr;
  if (stock_point != nullptr) {
    // A stock point: the ops go to its inter-op pool, and their kernels get
    // its intra-op pool (StockPointDevice), with no closure around each op
    // (StockPools::ScheduleOp).
    intra_op = IntraOpPoolViewOf(stock_point.get());
    stock_args.runner = [stock_point, order](std::function<void()> fn) {
      stock_point->ScheduleOp(std::move(fn), order);
    };
  } else {
    Args::Runner runner = args.runner;
    if (!runner) runner = [](std::function<void()> fn) { fn(); };
    if (ops_may_start_nested_steps_) {
      stock_args.runner = [runner = std::move(runner), order](std::function<void()> fn) {
        runner([order, fn = std::move(fn)] {
          ScopedStepOrder running(order);
          fn();
        });
      };
    } else {
      stock_args.runner = std::move(runner);
    }
  }
  ScopedStepOrder running(order);  // ops the stock executor runs on this thread
  ScopedIntraOpPoolView pool(intra_op);
  tensorflow::Executor* executor =
      stock_point != nullptr ? stock_point_executor_.get() : stock_executor_.get();
  // The step holds its pools until its done callback returns (it may run on
  // them; stock_pools.h), whatever the Runtime lets go meanwhile.
  executor->RunAsync(stock_args, [this, clock, pools = std::move(stock_point),
                                  done = std::move(done)](const absl::Status& status) {
    profile_->CountStockExecutorStep();
    profile_->StepFinished();
    EndStep(clock, status.ok());
    // `done` may destroy this executor: touch nothing after it.
    done(status);
  });
}

StepClock GraphiExecutor::BeginStep() {
  StepClock clock;
  // Not a function or loop body run by an op of another step: those run on
  // GRAPHI's threads, or, on TensorFlow's pools, inside a step's op.
  clock.top_level = !OnGraphiThread() && CurrentStepOrder() == kNoStepOrder;
  if (!clock.top_level) return clock;
  clock.concurrent = profile_->load().BeginTopLevelStep(&clock.overlap_epoch, &clock.in_flight);
  clock.start_ns = MonotonicNowNs();
  return clock;
}

void GraphiExecutor::EndStep(const StepClock& clock, bool ok) {
  if (!clock.top_level) return;
  StepSample sample;
  sample.end_ns = MonotonicNowNs();
  sample.start_ns = clock.start_ns;
  int in_flight_at_end = 1;
  sample.concurrent =
      profile_->load().EndTopLevelStep(clock.overlap_epoch, &in_flight_at_end) || clock.concurrent;
  sample.in_flight = GraphLoad::StepInFlight(clock.in_flight, in_flight_at_end, sample.concurrent);
  sample.signature = profile_->signature();
  sample.node_count = profile_->node_count();
  const TopLevelStepEnd end = profile_->load().NoteTopLevelStepEnd(sample.in_flight);
  // Before the autotuner hears of the step: the setting of the class the
  // graph is in now applies from the next step, and the autotuner may then
  // explore that class if nothing is adopted for it.
  if (end.load_class_changed) GraphRegistry::Get().LoadClassChanged(*profile_);
  sample.adopted = end.adopted;
  sample.load_class = end.load_class;
  sample.ok = ok;
  ProcessAutotuner().OnStep(sample);
}

const std::string* ExecutorTypeForKernels() {
  static const std::string* const type = new std::string(kExecutorTypeName);
  return type;
}

std::shared_ptr<const TeamDevices> GraphiExecutor::CurrentTeamDevices(absl::Status* status) {
  std::string error;
  std::shared_ptr<TeamSet> teams = Runtime::Get().CurrentTeams(&error);
  if (teams == nullptr) {
    *status = SettingError(error);
    return nullptr;
  }
  std::shared_ptr<const TeamDevices> devices;
  {
    MutexLock l(&devices_mu_);
    if (devices_ == nullptr || devices_->teams() != teams.get() ||
        devices_->generation() != teams->generation()) {
      devices_ = std::make_shared<const TeamDevices>(immutable_state_.params().device, teams.get());
    }
    devices = devices_;
  }
  // The step holds the set with its devices (team_devices.h), through one
  // pointer that keeps both.
  struct Held {
    std::shared_ptr<TeamSet> teams;
    std::shared_ptr<const TeamDevices> devices;
  };
  auto held = std::make_shared<const Held>(Held{std::move(teams), std::move(devices)});
  const TeamDevices* view = held->devices.get();
  return std::shared_ptr<const TeamDevices>(std::move(held), view);
}

void GraphiExecutor::RunAsyncInternal(const Args& args, DoneCallback done) {
  if (args.run_all_kernels_inline) {
    // Run the whole step on one thread; RunAsync must not block the caller,
    // so that thread comes from the caller's runner (which may be inline).
    Args copy = args;
    auto run = [this, copy, done = std::move(done)]() {
      absl::Status s = RunOnCaller(copy);
      done(s);
    };
    if (args.runner) {
      args.runner(std::move(run));
    } else {
      run();
    }
    return;
  }
  std::shared_ptr<StockPools> stock_point;
  if (Runtime::Get().UseStockExecutor(&stock_point)) {
    if (!profile_->recorder().Pending(profile_->steps_run())) {
      RunOnStockExecutor(args, std::move(stock_point), std::move(done));
      return;
    }
    // The "stock" setting with a timeline to record: GRAPHI's step on
    // TensorFlow's pools (null devices).
    StartDispatchedStep(args, plan_.get(), nullptr, std::move(done));
    return;
  }
  absl::Status status;
  std::shared_ptr<const TeamDevices> devices = CurrentTeamDevices(&status);
  if (devices == nullptr) {
    done(status);
    return;
  }
  StartDispatchedStep(args, plan_.get(), std::move(devices), std::move(done));
}

absl::Status GraphiExecutor::RunOnCaller(const Args& args) {
  // Kernels use the calling worker's team devices; off our threads, or when
  // the setting became invalid, the executor's own device.
  std::shared_ptr<const TeamDevices> devices;
  if (OnGraphiThread()) {
    absl::Status status;
    devices = CurrentTeamDevices(&status);
  }
  return RunCallerDrivenStep(args, plan_.get(), std::move(devices));
}

absl::Status GraphiExecutor::Run(const Args& args) {
  // A worker that waits for a step whose ops need workers could wait
  // forever (every team may be doing the same); it runs the step itself. So
  // does a stock point's inter-op thread (its pool may have no other).
  if (args.run_all_kernels_inline || OnGraphiThread() || CurrentIntraOpPoolView() != nullptr) {
    absl::Status s = RunOnCaller(args);
    if (!s.ok()) {
      tensorflow::Log("TFExecutor", "Run", s.message()).IgnoreError();
    }
    return s;
  }
  return tensorflow::Executor::Run(args);
}

}  // namespace graphi
