// An executor team's intra-op thread pool, pinned to the team's cores.
//
// A team of T cores has one leader (the Scheduler worker that calls a
// kernel's Compute) and T-1 helper threads, one pinned to each of the team's
// other cores. Kernels see this pool through the team's RenamedDevice, so
// Eigen, Shard() and oneDNN split their intra-op work over exactly the team's
// T cores: NumThreads() reports T because the leader works too (Eigen's
// parallelFor runs one block on the calling thread), and CurrentThreadId() is
// -1 on the leader, which oneDNN requires to not mistake the leader's call
// for nested parallelism. With T == 1 there are no helpers and Schedule()
// runs the closure inline.
//
// It derives from TensorFlow's ThreadPoolInterface (an Eigen interface)
// only so RenamedDevice can take it; it uses nothing else of TensorFlow.
//
// Thread-safety: thread-safe (Eigen's non-blocking pool underneath).
#ifndef GRAPHI_TF_CC_EXECUTOR_TEAM_THREAD_POOL_H_
#define GRAPHI_TF_CC_EXECUTOR_TEAM_THREAD_POOL_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tensorflow/core/platform/threadpool_interface.h"
#include "unsupported/Eigen/CXX11/ThreadPool"

namespace graphi {

class Scheduler;

class TeamThreadPool final : public tensorflow::thread::ThreadPoolInterface {
 public:
  // `scheduler` (may be null) is told about each helper thread so that its
  // watchdog can count the team's CPU time.
  TeamThreadPool(int team, std::vector<int> cpus, Scheduler* scheduler,
                 const std::string& name_prefix);
  ~TeamThreadPool() override;

  void Schedule(std::function<void()> fn) override;
  void ScheduleWithHint(std::function<void()> fn, int start, int end) override;
  void Cancel() override;
  int NumThreads() const override { return num_threads_; }
  int CurrentThreadId() const override;

 private:
  struct PinnedEnvironment;
  const int num_threads_;
  std::unique_ptr<Eigen::ThreadPoolTempl<PinnedEnvironment>> helpers_;
};

}  // namespace graphi

#endif  // GRAPHI_TF_CC_EXECUTOR_TEAM_THREAD_POOL_H_
