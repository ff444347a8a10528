// The intra-op pool of a merged team: every team's pinned helpers at once.
//
// When an expensive op on the critical path is ready and every other team is
// idle (a network's stem, the join of a layer), the Scheduler lends the idle
// teams to the team that runs it, and the op's kernel runs on a device whose
// pool is this one: Eigen, Shard() and oneDNN then split its work over all
// the teams' cores, and the teams split again when it returns (see
// Scheduler::TryBorrowIdleTeams).
//
// It owns no threads: Schedule() deals closures round-robin to the teams'
// TeamThreadPools, whose helpers are already pinned to their own cores, so a
// merged op uses exactly the cores of the teams it borrowed and nothing is
// started or woken that a split op would not use.
//
// Thread-safety: thread-safe. The team pools must outlive this object (the
// TeamSet owns both and destroys this one first).
#ifndef GRAPHI_TF_CC_EXECUTOR_MERGED_THREAD_POOL_H_
#define GRAPHI_TF_CC_EXECUTOR_MERGED_THREAD_POOL_H_

#include <atomic>
#include <functional>
#include <vector>

#include "cc/executor/team_thread_pool.h"
#include "tensorflow/core/platform/threadpool_interface.h"

namespace graphi {

class MergedThreadPool final : public tensorflow::thread::ThreadPoolInterface {
 public:
  explicit MergedThreadPool(std::vector<TeamThreadPool*> team_pools);

  void Schedule(std::function<void()> fn) override;
  // `start`/`end` index the merged thread range (team 0's helpers first).
  void ScheduleWithHint(std::function<void()> fn, int start, int end) override;
  void Cancel() override;
  int NumThreads() const override { return num_threads_; }
  // The caller's index in the merged range, or -1 off the teams' helpers
  // (e.g. on the leader that runs the kernel).
  int CurrentThreadId() const override;

 private:
  const std::vector<TeamThreadPool*> pools_;
  std::vector<int> offsets_;  // first merged index of each team's helpers
  int num_threads_ = 0;
  std::atomic<unsigned> next_{0};
};

}  // namespace graphi

#endif  // GRAPHI_TF_CC_EXECUTOR_MERGED_THREAD_POOL_H_
