// An executor team's intra-op thread pool, pinned to the team's cores.
//
// A team of T cores has one leader (the Scheduler worker that calls a
// kernel's Compute, pinned to the team's first core) and T helper threads,
// helper i pinned to the team's core i. Kernels see this pool
// through the team's RenamedDevice, so Eigen, Shard() and oneDNN split their
// intra-op work over exactly the team's T cores (unless the op runs on the
// team's WorkConservingPool, which also lets idle teams' leaders take blocks
// and hands this pool the blocks they do not take).
//
// Why T helpers and not T-1 plus the leader: Eigen's parallelFor and oneDNN's
// threadpool both assume NumThreads() pool threads exist, and when there are
// more blocks than threads they run every block in the pool while the caller
// sleeps in a barrier. With T-1 helpers that serialises the op on fewer
// cores than the team owns. The leader sleeps while its helpers work, so the team
// still has one busy thread per core. CurrentThreadId() is -1 on the leader,
// which oneDNN requires to not mistake the leader's call for nested
// parallelism. With T == 1 Eigen and Shard never split work, but a kernel
// that schedules a closure and waits for it still gets a real thread (running
// it inline could deadlock a kernel that signals the closure afterwards).
//
// It derives from TensorFlow's ThreadPoolInterface (an Eigen interface)
// only so RenamedDevice can take it; it uses nothing else of TensorFlow.
//
// Thread-safety: thread-safe (Eigen's non-blocking pool underneath).
#ifndef GRAPHI_TF_CC_TEAMS_TEAM_THREAD_POOL_H_
#define GRAPHI_TF_CC_TEAMS_TEAM_THREAD_POOL_H_

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

#endif  // GRAPHI_TF_CC_TEAMS_TEAM_THREAD_POOL_H_
