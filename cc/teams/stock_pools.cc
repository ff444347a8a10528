#include "cc/teams/stock_pools.h"

#include <atomic>
#include <cstdio>
#include <string>
#include <thread>

#include "cc/platform/float_environment.h"
#include "cc/platform/thread_affinity.h"
#include "cc/teams/eigen_environment.h"
#include "cc/teams/step_order.h"
#include "cc/util/check.h"

namespace graphi {

namespace {

// The StockPools whose inter-op thread this is (null elsewhere).
thread_local StockPools* tls_owner = nullptr;
// The StockPools whose inter-op or intra-op thread this is (null elsewhere).
thread_local const StockPools* tls_member_of = nullptr;
// The step of the task ScheduleOp is creating on this thread (CreateTask
// runs inside Eigen's Schedule, on the scheduling thread).
thread_local uint64_t tls_scheduling_step = kNoStepOrder;

}  // namespace

// Eigen's pool creates its threads through an Environment; ours names them
// and lets them run on every usable CPU, as TensorFlow's own pool threads do.
// Its tasks carry the step they belong to (ScheduleOp).
struct StockPools::Pool::NamedEnvironment : EigenEnvironmentBase {
  struct Task {
    std::function<void()> f;
    uint64_t step_order;
  };

  std::string name;
  std::vector<int> cpus;
  StockPools* owner = nullptr;
  const StockPools* member_of = nullptr;
  std::shared_ptr<std::atomic<int>> next = std::make_shared<std::atomic<int>>(0);

  EnvThread* CreateThread(std::function<void()> f) {
    const std::string thread_name = name + "-" + std::to_string(next->fetch_add(1));
    return new EnvThread([thread_name, cpus = cpus, owner = owner, member_of = member_of,
                          f = std::move(f)]() {
      std::string error;
      if (!cpus.empty() && !PinCurrentThread(cpus, &error)) {
        fprintf(stderr, "graphi_tf: could not widen %s to the usable cpus: %s\n",
                thread_name.c_str(), error.c_str());
      }
      NameCurrentThread(thread_name);
      UseKernelFloatEnvironment();  // as TensorFlow's pool threads (float_environment.h)
      tls_owner = owner;
      tls_member_of = member_of;
      f();
    });
  }

  Task CreateTask(std::function<void()> f) { return Task{std::move(f), tls_scheduling_step}; }
  void ExecuteTask(const Task& t) {
    if (t.step_order == kNoStepOrder) {
      t.f();
      return;
    }
    // Eigen runs a task inline when its queue is full, here inside
    // ScheduleOp: what the op schedules is not of that step unless it says.
    const uint64_t scheduling = tls_scheduling_step;
    tls_scheduling_step = kNoStepOrder;
    {
      ScopedStepOrder running(t.step_order);
      t.f();
    }
    tls_scheduling_step = scheduling;
  }
};

StockPools::Pool::Pool(int threads, const char* name, const std::vector<int>& cpus,
                       StockPools* owner, const StockPools* member_of)
    : num_threads_(threads) {
  GRAPHI_DCHECK(threads >= 1);
  NamedEnvironment env;
  env.name = name;
  env.cpus = cpus;
  env.owner = owner;
  env.member_of = member_of;
  // Spinning allowed, as TensorFlow's own pools do by default.
  pool_ = std::make_unique<Eigen::ThreadPoolTempl<NamedEnvironment>>(threads, /*allow_spinning=*/true,
                                                                     env);
}

StockPools::Pool::~Pool() = default;

void StockPools::Pool::Schedule(std::function<void()> fn) { pool_->Schedule(std::move(fn)); }

void StockPools::Pool::ScheduleWithHint(std::function<void()> fn, int start, int end) {
  pool_->ScheduleWithHint(std::move(fn), start, end);
}

void StockPools::Pool::Cancel() { pool_->Cancel(); }

int StockPools::Pool::CurrentThreadId() const { return pool_->CurrentThreadId(); }

StockPools::StockPools(int inter_op_threads, int intra_op_threads, const std::vector<int>& cpus)
    : intra_op_(intra_op_threads, "gstock-intra", cpus, /*owner=*/nullptr, /*member_of=*/this),
      inter_op_(inter_op_threads, "gstock-inter", cpus, /*owner=*/this, /*member_of=*/this) {}

std::shared_ptr<StockPools> StockPools::Create(int inter_op_threads, int intra_op_threads,
                                               const std::vector<int>& cpus) {
  return std::shared_ptr<StockPools>(
      new StockPools(inter_op_threads, intra_op_threads, cpus), [](StockPools* pools) {
        // The last holder may be a step's done callback on one of these
        // threads; joining that thread from itself would fail.
        if (pools->OnOwnThread()) {
          std::thread([pools] { delete pools; }).detach();
        } else {
          delete pools;
        }
      });
}

void StockPools::ScheduleOp(std::function<void()> op, uint64_t step_order) {
  const uint64_t saved = tls_scheduling_step;  // Schedule may run a task inline
  tls_scheduling_step = step_order;
  inter_op_.Schedule(std::move(op));
  tls_scheduling_step = saved;
}

StockPools* StockPools::OfCurrentThread() { return tls_owner; }

bool StockPools::OnOwnThread() const { return tls_member_of == this; }

StockPools::~StockPools() = default;

StockPools::Attachment* StockPools::Attach(
    const std::function<std::unique_ptr<Attachment>()>& make) {
  std::call_once(attach_once_, [&] { attachment_ = make(); });
  return attachment_.get();
}

}  // namespace graphi
