// Executor conformance: the behaviours TensorFlow's own executor tests
// (common_runtime/executor_test.cc, single_threaded_executor_test.cc) check,
// re-expressed with the symbols the pip wheel exports, and run against both
// TensorFlow's stock executor ("DEFAULT") and Graphi's ("GRAPHI").
//
// Every case is a TEST_P over (executor type, run mode); both executors must
// pass the same assertions. The run modes cover the three ways callers drive
// an executor:
//   * RunAsync   - Executor::RunAsync (FLR, eager functions);
//   * Run        - Executor::Run on the calling thread (DirectSession, FLR's
//                  RunSync); GraphiExecutor overrides it;
//   * RunInline  - Executor::Run with Args::run_all_kernels_inline set (the
//                  session's inline mode); GraphiExecutor runs the step on the
//                  caller then.
//
// No graph-building code is taken from TensorFlow's tests (the test::graph
// helpers are not shipped in the wheel); the small helpers below build nodes
// with NodeBuilder.
//
// Every run is bounded: a step that does not finish within kRunDeadline is a
// hang, reported as such, and the binary exits non-zero at once (a hung step
// leaves threads that still reference the test's objects, so the process
// cannot safely continue).
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "absl/synchronization/notification.h"
#include "unsupported/Eigen/CXX11/ThreadPool"
#include "absl/time/time.h"
#include "tensorflow/core/common_runtime/device.h"
#include "tensorflow/core/common_runtime/executor.h"
#include "tensorflow/core/common_runtime/executor_factory.h"
#include "tensorflow/core/common_runtime/local_executor_params.h"
#include "tensorflow/core/common_runtime/step_stats_collector.h"
#include "tensorflow/core/framework/device_factory.h"
#include "tensorflow/core/framework/function.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/rendezvous.h"
#include "tensorflow/core/framework/step_stats.pb.h"
#include "tensorflow/core/framework/tensor.h"
#include "tensorflow/core/framework/types.h"
#include "tensorflow/core/graph/algorithm.h"
#include "tensorflow/core/graph/graph.h"
#include "tensorflow/core/graph/node_builder.h"
#include "tensorflow/core/platform/env.h"
#include "tensorflow/core/platform/mutex.h"
#include "tensorflow/core/platform/threadpool.h"
#include "tensorflow/core/public/session_options.h"
#include "tensorflow/core/public/version.h"

namespace graphi_conformance {
namespace {

using ::tensorflow::DataType;
using ::tensorflow::Device;
using ::tensorflow::Executor;
using ::tensorflow::Graph;
using ::tensorflow::Node;
using ::tensorflow::NodeBuilder;
using ::tensorflow::OpKernel;
using ::tensorflow::OpKernelConstruction;
using ::tensorflow::OpKernelContext;
using ::tensorflow::Rendezvous;
using ::tensorflow::Tensor;
using ::tensorflow::TensorShape;

constexpr absl::Duration kRunDeadline = absl::Seconds(30);
constexpr int64_t kRecvTimeoutMs = 30000;
constexpr uint64_t kIncarnation = 1;
// The graph receives its inputs from "alice" and sends its outputs to her.
constexpr char kAlice[] = "/job:localhost/replica:0/task:0/device:CPU:0";
constexpr char kBob[] = "/job:localhost/replica:0/task:0/device:CPU:1";

// ---------------------------------------------------------------------------
// Test-only ops (registered in this binary, like any custom-op library).

// Outputs the address of the intra-op pool the kernel's device exposes, and
// whether a closure scheduled on that pool ran on one of its threads.
REGISTER_OP("GraphiConformanceIntraOpPool")
    .Output("pool: int64")
    .Output("ran_on_pool: bool")
    .SetIsStateful();

class IntraOpPoolProbeOp : public OpKernel {
 public:
  explicit IntraOpPoolProbeOp(OpKernelConstruction* ctx) : OpKernel(ctx) {}
  void Compute(OpKernelContext* ctx) override {
    const tensorflow::DeviceBase::CpuWorkerThreads* workers =
        ctx->device()->tensorflow_cpu_worker_threads();
    OP_REQUIRES(ctx, workers != nullptr && workers->workers != nullptr,
                absl::InternalError("device has no CPU worker threads"));
    Eigen::ThreadPoolInterface* pool = workers->workers->AsEigenThreadPool();
    // Schedule one closure on the pool and see where it runs.
    absl::Notification ran;
    bool on_pool = false;
    workers->workers->Schedule([&] {
      on_pool = pool->CurrentThreadId() >= 0;
      ran.Notify();
    });
    ran.WaitForNotification();
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({}), &out));
    out->scalar<int64_t>()() = static_cast<int64_t>(reinterpret_cast<intptr_t>(pool));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, TensorShape({}), &out));
    out->scalar<bool>()() = on_pool;
  }
};
REGISTER_KERNEL_BUILDER(Name("GraphiConformanceIntraOpPool").Device(tensorflow::DEVICE_CPU),
                        IntraOpPoolProbeOp);

// Declares a float_ref output but hands out a reference to a double tensor:
// the executor must reject the mismatching output type.
REGISTER_OP("GraphiConformanceWrongRefType").Output("out: Ref(float)").SetIsStateful();

class WrongRefTypeOp : public OpKernel {
 public:
  explicit WrongRefTypeOp(OpKernelConstruction* ctx)
      : OpKernel(ctx), value_(tensorflow::DT_DOUBLE, TensorShape({})) {
    value_.scalar<double>()() = 1.0;
  }
  void Compute(OpKernelContext* ctx) override { ctx->set_output_ref(0, &mu_, &value_); }

 private:
  tensorflow::mutex mu_;
  Tensor value_;
};
REGISTER_KERNEL_BUILDER(Name("GraphiConformanceWrongRefType").Device(tensorflow::DEVICE_CPU),
                        WrongRefTypeOp);

// ---------------------------------------------------------------------------
// Graph building on NodeBuilder. Each helper CHECK-fails the test on a
// malformed node (a bug in the test, not in the executor).

std::string Fresh(Graph* g, const std::string& prefix) {
  return g->NewName(prefix);
}

Node* Finish(NodeBuilder& b, Graph* g) {
  Node* n = nullptr;
  absl::Status s = b.Finalize(g, &n);
  if (!s.ok()) {
    ADD_FAILURE() << "building a node failed: " << s;
    std::fprintf(stderr, "FATAL: graph construction failed: %s\n", s.ToString().c_str());
    std::fflush(nullptr);
    std::_Exit(2);
  }
  return n;
}

Node* Recv(Graph* g, const std::string& tensor_name, DataType type) {
  NodeBuilder b(Fresh(g, "recv"), "_Recv");
  b.Attr("tensor_type", type)
      .Attr("tensor_name", tensor_name)
      .Attr("send_device", std::string(kAlice))
      .Attr("send_device_incarnation", static_cast<int64_t>(kIncarnation))
      .Attr("recv_device", std::string(kBob))
      .Attr("client_terminated", false);
  return Finish(b, g);
}

Node* Send(Graph* g, Node* input, int port, const std::string& tensor_name) {
  NodeBuilder b(Fresh(g, "send"), "_Send");
  b.Input(input, port)
      .Attr("tensor_name", tensor_name)
      .Attr("send_device", std::string(kBob))
      .Attr("send_device_incarnation", static_cast<int64_t>(kIncarnation))
      .Attr("recv_device", std::string(kAlice))
      .Attr("client_terminated", false);
  return Finish(b, g);
}
Node* Send(Graph* g, Node* input, const std::string& tensor_name) {
  return Send(g, input, 0, tensor_name);
}

Node* Const(Graph* g, const Tensor& value, const std::string& name = "") {
  NodeBuilder b(name.empty() ? Fresh(g, "const") : name, "Const");
  b.Attr("dtype", value.dtype()).Attr("value", value);
  return Finish(b, g);
}
Node* FloatConst(Graph* g, float v) {
  Tensor t(tensorflow::DT_FLOAT, TensorShape({}));
  t.scalar<float>()() = v;
  return Const(g, t);
}
Node* BoolConst(Graph* g, bool v) {
  Tensor t(tensorflow::DT_BOOL, TensorShape({}));
  t.scalar<bool>()() = v;
  return Const(g, t);
}

Node* Binary(Graph* g, const std::string& op, Node* x, Node* y, const std::string& name = "") {
  NodeBuilder b(name.empty() ? Fresh(g, op) : name, op);
  b.Input(x).Input(y);
  return Finish(b, g);
}
Node* Add(Graph* g, Node* x, Node* y) { return Binary(g, "Add", x, y); }

Node* Identity(Graph* g, Node* x, int port = 0) {
  NodeBuilder b(Fresh(g, "identity"), "Identity");
  b.Input(x, port);
  return Finish(b, g);
}

Node* Switch(Graph* g, Node* data, Node* pred) {
  NodeBuilder b(Fresh(g, "switch"), "Switch");
  b.Input(data).Input(pred);
  return Finish(b, g);
}

Node* CheckNumerics(Graph* g, Node* x, const std::string& name, const std::string& message) {
  NodeBuilder b(name, "CheckNumerics");
  b.Input(x).Attr("message", message);
  return Finish(b, g);
}

Node* Arg(Graph* g, int index, DataType type) {
  NodeBuilder b(Fresh(g, "arg"), "_Arg");
  b.Attr("T", type).Attr("index", index);
  return Finish(b, g);
}

Node* Retval(Graph* g, int index, Node* x) {
  NodeBuilder b(Fresh(g, "retval"), "_Retval");
  b.Input(x).Attr("index", index);
  return Finish(b, g);
}

Node* Variable(Graph* g, const std::string& name, DataType type, const TensorShape& shape) {
  NodeBuilder b(name, "VariableV2");
  b.Attr("dtype", type).Attr("shape", shape).Attr("container", "").Attr("shared_name", "");
  return Finish(b, g);
}

Node* Assign(Graph* g, Node* ref, Node* value) {
  NodeBuilder b(Fresh(g, "assign"), "Assign");
  b.Input(ref).Input(value).Attr("use_locking", true).Attr("validate_shape", true);
  return Finish(b, g);
}

Node* Custom(Graph* g, const std::string& op) {
  NodeBuilder b(Fresh(g, op), op);
  return Finish(b, g);
}

// Reduces `leaves` to one node with Adds paired at random (seeded).
Node* RandomAddTree(Graph* g, std::vector<Node*> leaves, uint32_t seed) {
  std::mt19937 rng(seed);
  while (leaves.size() > 1) {
    std::uniform_int_distribution<size_t> pick(0, leaves.size() - 1);
    size_t i = pick(rng);
    Node* x = leaves[i];
    leaves[i] = leaves.back();
    leaves.pop_back();
    std::uniform_int_distribution<size_t> pick2(0, leaves.size() - 1);
    size_t j = pick2(rng);
    Node* y = leaves[j];
    leaves[j] = leaves.back();
    leaves.pop_back();
    leaves.push_back(Add(g, x, y));
  }
  return leaves.front();
}

Tensor Scalar(float v) {
  Tensor t(tensorflow::DT_FLOAT, TensorShape({}));
  t.scalar<float>()() = v;
  return t;
}

// ---------------------------------------------------------------------------
// Rendezvous helpers.

struct RendezvousDeleter {
  void operator()(Rendezvous* r) const { r->Unref(); }
};
using RendezvousPtr = std::unique_ptr<Rendezvous, RendezvousDeleter>;

RendezvousPtr NewRendezvous() { return RendezvousPtr(tensorflow::NewLocalRendezvous()); }

Rendezvous::ParsedKey Key(const char* src, const char* dst, const std::string& name) {
  Rendezvous::ParsedKey parsed;
  const std::string key =
      Rendezvous::CreateKey(src, kIncarnation, dst, name, tensorflow::FrameAndIter(0, 0));
  absl::Status s = Rendezvous::ParseKey(key, &parsed);
  EXPECT_TRUE(s.ok()) << s;
  return parsed;
}

// Feeds a graph input (a _Recv of the graph).
absl::Status Feed(Rendezvous* r, const std::string& name, const Tensor& value) {
  return r->Send(Key(kAlice, kBob, name), Rendezvous::Args(), value, /*is_dead=*/false);
}

// Fetches a graph output (a _Send of the graph); bounded in time.
absl::Status Fetch(Rendezvous* r, const std::string& name, Tensor* value, bool* is_dead) {
  return r->Recv(Key(kBob, kAlice, name), Rendezvous::Args(), value, is_dead, kRecvTimeoutMs);
}

// ---------------------------------------------------------------------------
// The fixture.

enum class RunMode { kRunAsync, kRun, kRunInline };

using Param = std::tuple<std::string, RunMode>;

std::string ParamName(const ::testing::TestParamInfo<Param>& info) {
  const char* mode = "";
  switch (std::get<1>(info.param)) {
    case RunMode::kRunAsync: mode = "RunAsync"; break;
    case RunMode::kRun: mode = "Run"; break;
    case RunMode::kRunInline: mode = "RunInline"; break;
  }
  return std::get<0>(info.param) + "_" + mode;
}

[[noreturn]] void Hang(const char* what) {
  const ::testing::TestInfo* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::fprintf(stderr,
               "\nFATAL HANG in %s.%s: %s did not finish within %lld s; "
               "exiting (a hung step still references the test's objects).\n",
               info ? info->test_suite_name() : "?", info ? info->name() : "?", what,
               static_cast<long long>(absl::ToInt64Seconds(kRunDeadline)));
  std::fflush(nullptr);
  std::_Exit(3);
}

class ExecutorConformanceTest : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    tensorflow::SessionOptions options;
    (*options.config.mutable_device_count())["CPU"] = 1;
    device_ = tensorflow::DeviceFactory::NewDevice("CPU", options,
                                                   "/job:localhost/replica:0/task:0");
    ASSERT_NE(device_, nullptr) << "no CPU device factory registered";
    inter_op_ = std::make_unique<tensorflow::thread::ThreadPool>(tensorflow::Env::Default(),
                                                                 "conformance_inter_op", 4);
  }

  void TearDown() override {
    inter_op_.reset();  // joins the pool's threads; executors are gone by now
    device_.reset();
  }

  const std::string& executor_type() const { return std::get<0>(GetParam()); }
  RunMode mode() const { return std::get<1>(GetParam()); }

  // Defined with the Switch tests.
  void ExpectSwitchRoutes(bool pred);

  std::unique_ptr<Graph> NewGraph() {
    return std::make_unique<Graph>(tensorflow::OpRegistry::Global());
  }

  // Creates an executor for `graph` and drops the graph (an executor must not
  // keep pointers into it).
  std::unique_ptr<Executor> Create(std::unique_ptr<Graph> graph) {
    tensorflow::FixupSourceAndSinkEdges(graph.get());
    tensorflow::LocalExecutorParams params;
    params.device = device_.get();
    params.session_metadata = nullptr;
    params.function_library = nullptr;
    Device* device = device_.get();
    params.create_kernel = [device](const std::shared_ptr<const tensorflow::NodeProperties>& props,
                                    OpKernel** kernel) {
      return tensorflow::CreateNonCachedKernel(device, nullptr, props, TF_GRAPH_DEF_VERSION,
                                               kernel);
    };
    params.delete_kernel = [](OpKernel* kernel) { tensorflow::DeleteNonCachedKernel(kernel); };
    std::unique_ptr<Executor> executor;
    absl::Status s = tensorflow::NewExecutor(executor_type(), params, *graph, &executor);
    EXPECT_TRUE(s.ok()) << "NewExecutor(" << executor_type() << "): " << s;
    graph.reset();
    return executor;
  }

  // Args filled the way the stock executor tests run steps.
  Executor::Args MakeArgs(Rendezvous* rendezvous) {
    Executor::Args args;
    args.step_id = next_step_id_.fetch_add(1);
    args.rendezvous = rendezvous;
    tensorflow::thread::ThreadPool* pool = inter_op_.get();
    args.runner = [pool](std::function<void()> fn) { pool->Schedule(std::move(fn)); };
    args.run_all_kernels_inline = mode() == RunMode::kRunInline;
    return args;
  }

  // Runs one step in the current run mode and returns its status; a step
  // that has not finished after kRunDeadline ends the process (see Hang).
  absl::Status RunStep(Executor* executor, const Executor::Args& args) {
    struct State {
      absl::Notification finished;
      absl::Status status;
      std::atomic<int> done_calls{0};
    };
    auto state = std::make_shared<State>();
    if (mode() == RunMode::kRunAsync) {
      executor->RunAsync(args, [state](const absl::Status& s) {
        if (state->done_calls.fetch_add(1) == 0) {
          state->status = s;
          state->finished.Notify();
        }
      });
      if (!state->finished.WaitForNotificationWithTimeout(kRunDeadline)) Hang("RunAsync");
      EXPECT_EQ(state->done_calls.load(), 1);
      return state->status;
    }
    // Run is synchronous; call it from a helper thread so that a hang can be
    // detected instead of blocking the test binary forever.
    std::thread runner([state, executor, args] {
      state->status = executor->Run(args);
      state->finished.Notify();
    });
    if (!state->finished.WaitForNotificationWithTimeout(kRunDeadline)) {
      runner.detach();
      Hang("Run");
    }
    runner.join();
    return state->status;
  }

  absl::Status RunStep(Executor* executor, Rendezvous* rendezvous) {
    return RunStep(executor, MakeArgs(rendezvous));
  }

  std::unique_ptr<Device> device_;
  std::unique_ptr<tensorflow::thread::ThreadPool> inter_op_;
  std::atomic<int64_t> next_step_id_{1};
};

float ScalarValue(const Tensor& t) { return t.scalar<float>()(); }

// ---------------------------------------------------------------------------
// Cases.

// Recv a, Recv b -> Add -> Send: values flow through the rendezvous.
TEST_P(ExecutorConformanceTest, SimpleAdd) {
  auto g = NewGraph();
  Node* a = Recv(g.get(), "a", tensorflow::DT_FLOAT);
  Node* b = Recv(g.get(), "b", tensorflow::DT_FLOAT);
  Send(g.get(), Add(g.get(), a, b), "c");
  auto executor = Create(std::move(g));
  ASSERT_NE(executor, nullptr);

  auto rendezvous = NewRendezvous();
  ASSERT_TRUE(Feed(rendezvous.get(), "a", Scalar(1.0f)).ok());
  ASSERT_TRUE(Feed(rendezvous.get(), "b", Scalar(1.0f)).ok());
  absl::Status s = RunStep(executor.get(), rendezvous.get());
  ASSERT_TRUE(s.ok()) << s;
  Tensor out;
  bool is_dead = true;
  ASSERT_TRUE(Fetch(rendezvous.get(), "c", &out, &is_dead).ok());
  EXPECT_FALSE(is_dead);
  EXPECT_EQ(ScalarValue(out), 2.0f);
}

// v = Add(v, v) ten times from 1.0: one tensor feeds both inputs of a node.
TEST_P(ExecutorConformanceTest, SelfAdd) {
  auto g = NewGraph();
  Node* v = Recv(g.get(), "a", tensorflow::DT_FLOAT);
  for (int i = 0; i < 10; ++i) v = Add(g.get(), v, v);
  Send(g.get(), v, "out");
  auto executor = Create(std::move(g));
  ASSERT_NE(executor, nullptr);

  auto rendezvous = NewRendezvous();
  ASSERT_TRUE(Feed(rendezvous.get(), "a", Scalar(1.0f)).ok());
  absl::Status s = RunStep(executor.get(), rendezvous.get());
  ASSERT_TRUE(s.ok()) << s;
  Tensor out;
  bool is_dead = true;
  ASSERT_TRUE(Fetch(rendezvous.get(), "out", &out, &is_dead).ok());
  EXPECT_FALSE(is_dead);
  EXPECT_EQ(ScalarValue(out), 1024.0f);
}

// A wide DAG: 1024 Identity copies of one input reduced by a random tree of
// Adds.
TEST_P(ExecutorConformanceTest, RandomTree) {
  auto g = NewGraph();
  Node* in = Recv(g.get(), "a", tensorflow::DT_FLOAT);
  std::vector<Node*> leaves;
  for (int i = 0; i < 1024; ++i) leaves.push_back(Identity(g.get(), in));
  Send(g.get(), RandomAddTree(g.get(), leaves, /*seed=*/301), "out");
  auto executor = Create(std::move(g));
  ASSERT_NE(executor, nullptr);

  for (int run = 0; run < 3; ++run) {
    auto rendezvous = NewRendezvous();
    ASSERT_TRUE(Feed(rendezvous.get(), "a", Scalar(1.0f)).ok());
    absl::Status s = RunStep(executor.get(), rendezvous.get());
    ASSERT_TRUE(s.ok()) << s;
    Tensor out;
    bool is_dead = true;
    ASSERT_TRUE(Fetch(rendezvous.get(), "out", &out, &is_dead).ok());
    EXPECT_FALSE(is_dead);
    EXPECT_EQ(ScalarValue(out), 1024.0f) << "run " << run;
  }
}

// One executor, eight threads running it at once, each step with its own
// rendezvous and its own input; every step must see only its own values.
TEST_P(ExecutorConformanceTest, ConcurrentRuns) {
  auto g = NewGraph();
  Node* in = Recv(g.get(), "a", tensorflow::DT_FLOAT);
  std::vector<Node*> leaves;
  for (int i = 0; i < 256; ++i) leaves.push_back(Identity(g.get(), in));
  Send(g.get(), RandomAddTree(g.get(), leaves, /*seed=*/7), "out");
  auto executor = Create(std::move(g));
  ASSERT_NE(executor, nullptr);

  constexpr int kThreads = 8;
  constexpr int kRunsPerThread = 4;
  std::atomic<int> correct{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int run = 0; run < kRunsPerThread; ++run) {
        auto rendezvous = NewRendezvous();
        const float input = static_cast<float>(t + 1);
        EXPECT_TRUE(Feed(rendezvous.get(), "a", Scalar(input)).ok());
        absl::Status s = RunStep(executor.get(), rendezvous.get());
        EXPECT_TRUE(s.ok()) << "thread " << t << " run " << run << ": " << s;
        if (!s.ok()) continue;
        Tensor out;
        bool is_dead = true;
        absl::Status f = Fetch(rendezvous.get(), "out", &out, &is_dead);
        EXPECT_TRUE(f.ok()) << f;
        if (!f.ok()) continue;
        EXPECT_FALSE(is_dead);
        EXPECT_EQ(ScalarValue(out), 256.0f * input) << "thread " << t << " run " << run;
        if (!is_dead && ScalarValue(out) == 256.0f * input) correct.fetch_add(1);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(correct.load(), kThreads * kRunsPerThread);
}

// Reference edges and concurrent stateful kernels: 1024 (read var, add one,
// assign) chains on one ref variable. Each Assign stores (a value read in
// this step) + 1, so one step raises the variable by between 1 and 1024.
TEST_P(ExecutorConformanceTest, ConcurrentAddAssign) {
  const TensorShape scalar({});
  std::unique_ptr<Executor> init, update, read;
  {
    auto g = NewGraph();
    Node* var = Variable(g.get(), "var", tensorflow::DT_FLOAT, scalar);
    Assign(g.get(), var, FloatConst(g.get(), 1.0f));
    init = Create(std::move(g));
  }
  {
    auto g = NewGraph();
    Node* var = Variable(g.get(), "var", tensorflow::DT_FLOAT, scalar);
    Node* one = FloatConst(g.get(), 1.0f);
    for (int i = 0; i < 1024; ++i) Assign(g.get(), var, Add(g.get(), var, one));
    update = Create(std::move(g));
  }
  {
    auto g = NewGraph();
    Node* var = Variable(g.get(), "var", tensorflow::DT_FLOAT, scalar);
    Send(g.get(), Identity(g.get(), var), "value");
    read = Create(std::move(g));
  }
  ASSERT_NE(init, nullptr);
  ASSERT_NE(update, nullptr);
  ASSERT_NE(read, nullptr);

  auto read_value = [&](float* value) {
    auto rendezvous = NewRendezvous();
    absl::Status s = RunStep(read.get(), rendezvous.get());
    ASSERT_TRUE(s.ok()) << s;
    Tensor out;
    bool is_dead = true;
    ASSERT_TRUE(Fetch(rendezvous.get(), "value", &out, &is_dead).ok());
    ASSERT_FALSE(is_dead);
    *value = ScalarValue(out);
  };

  {
    auto rendezvous = NewRendezvous();
    absl::Status s = RunStep(init.get(), rendezvous.get());
    ASSERT_TRUE(s.ok()) << s;
  }
  float previous = 0.0f;
  read_value(&previous);
  ASSERT_EQ(previous, 1.0f);
  for (int run = 0; run < 16; ++run) {
    auto rendezvous = NewRendezvous();
    absl::Status s = RunStep(update.get(), rendezvous.get());
    ASSERT_TRUE(s.ok()) << "run " << run << ": " << s;
    float now = 0.0f;
    read_value(&now);
    EXPECT_GE(now, previous + 1.0f) << "run " << run;
    EXPECT_LE(now, previous + 1024.0f) << "run " << run;
    previous = now;
  }
}

// Recv -> Switch(pred); both Switch outputs are sent. The taken branch
// arrives live with the input value, the other one dead.

// Runs Recv("a"=3) -> Switch(pred) with both outputs sent, and checks that
// the branch `pred` selects arrives live with the value and the other dead.
void ExecutorConformanceTest::ExpectSwitchRoutes(bool pred) {
  auto g = NewGraph();
  Node* in = Recv(g.get(), "a", tensorflow::DT_FLOAT);
  Node* sw = Switch(g.get(), in, BoolConst(g.get(), pred));
  Send(g.get(), sw, 0, "false_branch");
  Send(g.get(), sw, 1, "true_branch");
  auto executor = Create(std::move(g));
  ASSERT_NE(executor, nullptr);

  auto rendezvous = NewRendezvous();
  ASSERT_TRUE(Feed(rendezvous.get(), "a", Scalar(3.0f)).ok());
  absl::Status s = RunStep(executor.get(), rendezvous.get());
  ASSERT_TRUE(s.ok()) << s;
  const char* taken = pred ? "true_branch" : "false_branch";
  const char* not_taken = pred ? "false_branch" : "true_branch";
  Tensor out;
  bool is_dead = true;
  ASSERT_TRUE(Fetch(rendezvous.get(), taken, &out, &is_dead).ok());
  EXPECT_FALSE(is_dead);
  EXPECT_EQ(ScalarValue(out), 3.0f);
  is_dead = false;
  ASSERT_TRUE(Fetch(rendezvous.get(), not_taken, &out, &is_dead).ok());
  EXPECT_TRUE(is_dead);
}

TEST_P(ExecutorConformanceTest, SimpleSwitchLive) { ExpectSwitchRoutes(true); }

TEST_P(ExecutorConformanceTest, SimpleSwitchDead) { ExpectSwitchRoutes(false); }

// Four Recvs; three are fed ~100 ms into the step, then the rendezvous is
// aborted. The step must end with Aborted (no hang) and the output channel
// must report the abort too.
TEST_P(ExecutorConformanceTest, Abort) {
  auto g = NewGraph();
  Node* a = Recv(g.get(), "a", tensorflow::DT_FLOAT);
  Node* b = Recv(g.get(), "b", tensorflow::DT_FLOAT);
  Node* c = Recv(g.get(), "c", tensorflow::DT_FLOAT);
  Node* d = Recv(g.get(), "d", tensorflow::DT_FLOAT);
  Send(g.get(), Add(g.get(), Add(g.get(), a, b), Add(g.get(), c, d)), "e");
  auto executor = Create(std::move(g));
  ASSERT_NE(executor, nullptr);

  auto rendezvous = NewRendezvous();
  Rendezvous* r = rendezvous.get();
  std::thread feeder([r] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    EXPECT_TRUE(Feed(r, "a", Scalar(1.0f)).ok());
    EXPECT_TRUE(Feed(r, "b", Scalar(1.0f)).ok());
    EXPECT_TRUE(Feed(r, "c", Scalar(1.0f)).ok());
    r->StartAbort(absl::AbortedError("conformance: aborting the rendezvous"));
  });
  absl::Status s = RunStep(executor.get(), r);
  feeder.join();
  EXPECT_TRUE(absl::IsAborted(s)) << s;
  Tensor out;
  bool is_dead = false;
  absl::Status f = Fetch(r, "e", &out, &is_dead);
  EXPECT_TRUE(absl::IsAborted(f)) << f;
}

// A double fed to a float Recv is an Internal error; the executor must abort
// the rendezvous, so the graph's other (never fed) Recv fails as well and the
// step ends instead of waiting for it, and the output channel reports the
// error.
TEST_P(ExecutorConformanceTest, RecvInvalidDtype) {
  auto g = NewGraph();
  Node* one = Recv(g.get(), "one", tensorflow::DT_FLOAT);
  Send(g.get(), Identity(g.get(), one), "one_out");
  Node* two = Recv(g.get(), "two", tensorflow::DT_FLOAT);
  Send(g.get(), Identity(g.get(), two), "two_out");
  auto executor = Create(std::move(g));
  ASSERT_NE(executor, nullptr);

  auto rendezvous = NewRendezvous();
  Tensor wrong(tensorflow::DT_DOUBLE, TensorShape({1}));
  wrong.flat<double>()(0) = 0.0;
  ASSERT_TRUE(Feed(rendezvous.get(), "one", wrong).ok());
  absl::Status s = RunStep(executor.get(), rendezvous.get());
  EXPECT_TRUE(absl::IsInternal(s)) << s;
  Tensor out;
  bool is_dead = false;
  absl::Status f = Fetch(rendezvous.get(), "two_out", &out, &is_dead);
  EXPECT_TRUE(absl::IsInternal(f)) << f;
}

// An op whose ref output has the wrong type is an Internal error.
TEST_P(ExecutorConformanceTest, InvalidRefDtype) {
  auto g = NewGraph();
  Send(g.get(), Identity(g.get(), Custom(g.get(), "GraphiConformanceWrongRefType")), "out");
  auto executor = Create(std::move(g));
  ASSERT_NE(executor, nullptr);

  auto rendezvous = NewRendezvous();
  absl::Status s = RunStep(executor.get(), rendezvous.get());
  EXPECT_TRUE(absl::IsInternal(s)) << s;
}

// A graph with no inputs at all: one Const.
TEST_P(ExecutorConformanceTest, NoInputTensors) {
  auto g = NewGraph();
  FloatConst(g.get(), 1.0f);
  auto executor = Create(std::move(g));
  ASSERT_NE(executor, nullptr);
  auto rendezvous = NewRendezvous();
  absl::Status s = RunStep(executor.get(), rendezvous.get());
  EXPECT_TRUE(s.ok()) << s;
}

// No nodes besides _SOURCE and _SINK; all Args pointers null except runner.
TEST_P(ExecutorConformanceTest, EmptyGraphNullArgs) {
  auto executor = Create(NewGraph());
  ASSERT_NE(executor, nullptr);
  absl::Status s = RunStep(executor.get(), static_cast<Rendezvous*>(nullptr));
  EXPECT_TRUE(s.ok()) << s;
}

// A kernel error: CheckNumerics on 1/0 is InvalidArgument and the message
// names the failing node.
TEST_P(ExecutorConformanceTest, OpError) {
  auto g = NewGraph();
  Node* ratio = Binary(g.get(), "RealDiv", FloatConst(g.get(), 1.0f), FloatConst(g.get(), 0.0f));
  Node* check = CheckNumerics(g.get(), ratio, "conformance_check_numerics", "found a bad value");
  Send(g.get(), check, "out");
  auto executor = Create(std::move(g));
  ASSERT_NE(executor, nullptr);

  auto rendezvous = NewRendezvous();
  absl::Status s = RunStep(executor.get(), rendezvous.get());
  EXPECT_TRUE(absl::IsInvalidArgument(s)) << s;
  EXPECT_NE(std::string(s.message()).find("conformance_check_numerics"), std::string::npos) << s;
}

// With a StepStatsCollector, every executed node that the collector tracks
// (all but the _Send/_Recv transfer nodes, which it declines) is reported
// exactly once, with its outputs.
TEST_P(ExecutorConformanceTest, StepStats) {
  auto g = NewGraph();
  Node* in = Recv(g.get(), "a", tensorflow::DT_FLOAT);
  Node* c = FloatConst(g.get(), 2.0f);
  std::vector<Node*> leaves;
  for (int i = 0; i < 8; ++i) leaves.push_back(Identity(g.get(), i % 2 ? in : c));
  Send(g.get(), RandomAddTree(g.get(), leaves, /*seed=*/11), "out");
  std::set<std::string> expected;  // op nodes the collector tracks
  for (Node* n : g->op_nodes()) {
    if (!n->IsSend() && !n->IsRecv()) expected.insert(n->name());
  }
  auto executor = Create(std::move(g));
  ASSERT_NE(executor, nullptr);

  tensorflow::StepStats step_stats;
  tensorflow::StepStatsCollector collector(&step_stats);
  auto rendezvous = NewRendezvous();
  ASSERT_TRUE(Feed(rendezvous.get(), "a", Scalar(1.0f)).ok());
  Executor::Args args = MakeArgs(rendezvous.get());
  args.stats_collector = &collector;
  absl::Status s = RunStep(executor.get(), args);
  ASSERT_TRUE(s.ok()) << s;
  Tensor out;
  bool is_dead = true;
  ASSERT_TRUE(Fetch(rendezvous.get(), "out", &out, &is_dead).ok());
  EXPECT_EQ(ScalarValue(out), 4 * 1.0f + 4 * 2.0f);
  collector.Finalize();

  std::map<std::string, int> seen;
  for (const auto& dev : step_stats.dev_stats()) {
    EXPECT_EQ(dev.device(), device_->name());
    for (const auto& ns : dev.node_stats()) {
      ++seen[ns.node_name()];
      if (expected.count(ns.node_name()) == 0) continue;
      EXPECT_GT(ns.all_start_micros(), 0) << ns.node_name();
      EXPECT_GE(ns.op_end_rel_micros(), ns.op_start_rel_micros()) << ns.node_name();
      EXPECT_GE(ns.all_end_rel_micros(), ns.op_end_rel_micros()) << ns.node_name();
      EXPECT_EQ(ns.output_size(), 1) << ns.node_name() << " outputs not recorded";
    }
  }
  for (const std::string& name : expected) {
    EXPECT_EQ(seen[name], 1) << name << " reported " << seen[name] << " times";
  }
  for (const auto& [name, count] : seen) {
    if (expected.count(name)) continue;
    // Besides the tracked op nodes only the executor's _SOURCE/_SINK may
    // appear, once each.
    EXPECT_TRUE(name == "_SOURCE" || name == "_SINK") << "unexpected node in stats: " << name;
    EXPECT_EQ(count, 1) << name;
  }
}

// Function-style I/O: two _Args added into a _Retval via a FunctionCallFrame;
// the frame's arguments are left as they were.
TEST_P(ExecutorConformanceTest, CallFrame) {
  auto g = NewGraph();
  Node* x = Arg(g.get(), 0, tensorflow::DT_FLOAT);
  Node* y = Arg(g.get(), 1, tensorflow::DT_FLOAT);
  Retval(g.get(), 0, Add(g.get(), x, y));
  auto executor = Create(std::move(g));
  ASSERT_NE(executor, nullptr);

  const tensorflow::DataTypeVector arg_types = {tensorflow::DT_FLOAT, tensorflow::DT_FLOAT};
  const tensorflow::DataTypeVector ret_types = {tensorflow::DT_FLOAT};
  for (int run = 0; run < 3; ++run) {
    tensorflow::FunctionCallFrame frame(arg_types, ret_types);
    ASSERT_TRUE(frame.SetArgs({Scalar(1.0f), Scalar(2.0f)}).ok());
    Executor::Args args = MakeArgs(nullptr);
    args.call_frame = &frame;
    absl::Status s = RunStep(executor.get(), args);
    ASSERT_TRUE(s.ok()) << s;
    std::vector<Tensor> rets;
    ASSERT_TRUE(frame.ConsumeRetvals(&rets, /*allow_dead_tensors=*/false).ok());
    ASSERT_EQ(rets.size(), 1u);
    EXPECT_EQ(ScalarValue(rets[0]), 3.0f);
    const Tensor* arg = nullptr;
    ASSERT_TRUE(frame.GetArg(0, &arg).ok());
    EXPECT_EQ(ScalarValue(*arg), 1.0f);
    ASSERT_TRUE(frame.GetArg(1, &arg).ok());
    EXPECT_EQ(ScalarValue(*arg), 2.0f);
  }
}

// Control edges out of _Arg and Const into _Retval and Add.
TEST_P(ExecutorConformanceTest, ControlDependenciesFromSpecialNodes) {
  auto g = NewGraph();
  Node* x = Arg(g.get(), 0, tensorflow::DT_FLOAT);
  Node* c = FloatConst(g.get(), 5.0f);
  Node* sum = Add(g.get(), x, x);
  g->AddControlEdge(c, sum);
  Node* ret = Retval(g.get(), 0, sum);
  g->AddControlEdge(x, ret);
  g->AddControlEdge(c, ret);
  auto executor = Create(std::move(g));
  ASSERT_NE(executor, nullptr);

  tensorflow::FunctionCallFrame frame({tensorflow::DT_FLOAT}, {tensorflow::DT_FLOAT});
  ASSERT_TRUE(frame.SetArgs({Scalar(4.0f)}).ok());
  Executor::Args args = MakeArgs(nullptr);
  args.call_frame = &frame;
  absl::Status s = RunStep(executor.get(), args);
  ASSERT_TRUE(s.ok()) << s;
  std::vector<Tensor> rets;
  ASSERT_TRUE(frame.GetRetvals(&rets).ok());
  ASSERT_EQ(rets.size(), 1u);
  EXPECT_EQ(ScalarValue(rets[0]), 8.0f);
}

// A caller-owned intra-op pool, as C++ Session::Run(..., ThreadPoolOptions)
// callers pass one.
class UserIntraOpPool : public tensorflow::thread::ThreadPoolInterface {
 public:
  explicit UserIntraOpPool(int num_threads) : pool_(num_threads) {}
  void Schedule(std::function<void()> fn) override { pool_.Schedule(std::move(fn)); }
  int NumThreads() const override { return pool_.NumThreads(); }
  int CurrentThreadId() const override { return pool_.CurrentThreadId(); }

 private:
  Eigen::ThreadPool pool_;
};

// Args::user_intra_op_threadpool is the intra-op pool kernels see: the probe
// op reports the pool of its device and runs a closure on it.
TEST_P(ExecutorConformanceTest, UserIntraOpThreadPool) {
  auto g = NewGraph();
  Node* probe = Custom(g.get(), "GraphiConformanceIntraOpPool");
  Send(g.get(), probe, 0, "pool");
  Send(g.get(), probe, 1, "ran_on_pool");
  Node* in = Recv(g.get(), "a", tensorflow::DT_FLOAT);
  std::vector<Node*> leaves;
  for (int i = 0; i < 16; ++i) leaves.push_back(Identity(g.get(), in));
  Send(g.get(), RandomAddTree(g.get(), leaves, /*seed=*/5), "sum");
  auto executor = Create(std::move(g));
  ASSERT_NE(executor, nullptr);

  UserIntraOpPool user_pool(2);
  const int64_t user_pool_address = static_cast<int64_t>(
      reinterpret_cast<intptr_t>(static_cast<Eigen::ThreadPoolInterface*>(&user_pool)));

  for (bool with_user_pool : {true, false}) {
    SCOPED_TRACE(with_user_pool ? "with user pool" : "without user pool");
    auto rendezvous = NewRendezvous();
    ASSERT_TRUE(Feed(rendezvous.get(), "a", Scalar(1.0f)).ok());
    Executor::Args args = MakeArgs(rendezvous.get());
    if (with_user_pool) args.user_intra_op_threadpool = &user_pool;
    absl::Status s = RunStep(executor.get(), args);
    ASSERT_TRUE(s.ok()) << s;
    Tensor out;
    bool is_dead = true;
    ASSERT_TRUE(Fetch(rendezvous.get(), "sum", &out, &is_dead).ok());
    EXPECT_EQ(ScalarValue(out), 16.0f);
    ASSERT_TRUE(Fetch(rendezvous.get(), "pool", &out, &is_dead).ok());
    ASSERT_FALSE(is_dead);
    if (with_user_pool) {
      EXPECT_EQ(out.scalar<int64_t>()(), user_pool_address);
    } else {
      EXPECT_NE(out.scalar<int64_t>()(), user_pool_address);
    }
    ASSERT_TRUE(Fetch(rendezvous.get(), "ran_on_pool", &out, &is_dead).ok());
    if (with_user_pool) {
      // Work a kernel schedules on its device's pool runs on the user's pool.
      EXPECT_TRUE(out.scalar<bool>()()) << "closure did not run on the user's intra-op pool";
    }
    // Without a user pool, where such a closure runs is the executor's
    // business (GRAPHI's one-core teams run it inline on the calling
    // thread), so nothing is asserted about it.
  }
}

// RunAsync with failing nodes (eight fail at once) and a Recv that is never
// fed: `done` is called exactly once, with the error, and never again.
TEST_P(ExecutorConformanceTest, RunAsyncDoneCalledExactlyOnce) {
  auto g = NewGraph();
  Node* ratio = Binary(g.get(), "RealDiv", FloatConst(g.get(), 1.0f), FloatConst(g.get(), 0.0f));
  for (int i = 0; i < 8; ++i) {
    Node* check = CheckNumerics(g.get(), Identity(g.get(), ratio),
                                "bad_value_" + std::to_string(i), "found a bad value");
    Send(g.get(), check, "out_" + std::to_string(i));
  }
  Node* never_fed = Recv(g.get(), "never_fed", tensorflow::DT_FLOAT);
  Send(g.get(), Identity(g.get(), never_fed), "never_out");
  auto executor = Create(std::move(g));
  ASSERT_NE(executor, nullptr);

  for (int run = 0; run < 3; ++run) {
    auto rendezvous = NewRendezvous();
    struct State {
      std::atomic<int> calls{0};
      absl::Notification first;
      absl::Status status;
    };
    auto state = std::make_shared<State>();
    executor->RunAsync(MakeArgs(rendezvous.get()), [state](const absl::Status& s) {
      if (state->calls.fetch_add(1) == 0) {
        state->status = s;
        state->first.Notify();
      }
    });
    if (!state->first.WaitForNotificationWithTimeout(kRunDeadline)) Hang("RunAsync");
    // Give a second (wrong) call time to happen.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    EXPECT_EQ(state->calls.load(), 1) << "run " << run;
    EXPECT_TRUE(absl::IsInvalidArgument(state->status)) << state->status;
  }
}

INSTANTIATE_TEST_SUITE_P(Executors, ExecutorConformanceTest,
                         ::testing::Combine(::testing::Values(std::string("DEFAULT"),
                                                              std::string("GRAPHI")),
                                            ::testing::Values(RunMode::kRunAsync, RunMode::kRun,
                                                              RunMode::kRunInline)),
                         ParamName);

}  // namespace
}  // namespace graphi_conformance

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // Both executor types must be registered before any case runs; a missing
  // GRAPHI registration would otherwise show up as 13 confusing failures.
  for (const char* type : {"DEFAULT", "GRAPHI"}) {
    tensorflow::ExecutorFactory* factory = nullptr;
    absl::Status s = tensorflow::ExecutorFactory::GetFactory(type, &factory);
    if (!s.ok()) {
      std::fprintf(stderr, "executor type %s is not registered: %s\n", type,
                   s.ToString().c_str());
      return 1;
    }
  }
  return RUN_ALL_TESTS();
}
