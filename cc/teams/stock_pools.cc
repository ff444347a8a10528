#include "cc/teams/stock_pools.h"

#include <atomic>
#include <cstdio>
#include <string>

#include "cc/platform/thread_affinity.h"
#include "cc/teams/eigen_environment.h"
#include "cc/util/check.h"

namespace graphi {

// Eigen's pool creates its threads through an Environment; ours names them
// and lets them run on every usable CPU, as TensorFlow's own pool threads do.
struct StockPools::Pool::NamedEnvironment : EigenEnvironmentBase {
  std::string name;
  std::vector<int> cpus;
  std::shared_ptr<std::atomic<int>> next = std::make_shared<std::atomic<int>>(0);

  EnvThread* CreateThread(std::function<void()> f) {
    const std::string thread_name = name + "-" + std::to_string(next->fetch_add(1));
    return new EnvThread([thread_name, cpus = cpus, f = std::move(f)]() {
      std::string error;
      if (!cpus.empty() && !PinCurrentThread(cpus, &error)) {
        fprintf(stderr, "graphi_tf: could not widen %s to the usable cpus: %s\n",
                thread_name.c_str(), error.c_str());
      }
      NameCurrentThread(thread_name);
      f();
    });
  }
};

StockPools::Pool::Pool(int threads, const char* name, const std::vector<int>& cpus)
    : num_threads_(threads) {
  GRAPHI_DCHECK(threads >= 1);
  NamedEnvironment env;
  env.name = name;
  env.cpus = cpus;
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
    : intra_op_(intra_op_threads, "gstock-intra", cpus),
      inter_op_(inter_op_threads, "gstock-inter", cpus) {}

StockPools::~StockPools() = default;

StockPools::Attachment* StockPools::Attach(
    const std::function<std::unique_ptr<Attachment>()>& make) {
  std::call_once(attach_once_, [&] { attachment_ = make(); });
  return attachment_.get();
}

}  // namespace graphi
