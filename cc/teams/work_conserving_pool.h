// The intra-op pool a team's kernels see when other teams may help.
//
// Team k has its own pinned TeamThreadPool of T_k helpers. An op started while
// a leader of another team is idle, or a long one, runs on a device over this
// pool instead (GraphiStep::RunDevice in graphi_step.cc):
// NumThreads() counts every core of the layout, so Eigen, Shard() and oneDNN
// divide the op into enough blocks for all of them, and each block goes to
// Scheduler::OfferBlock: an idle leader of another team runs it on its own
// core (work conservation, see StealList), or team k's helpers do, as with
// the team's own pool. The other teams' leaders take blocks only while they
// have nothing to run, and stop after the block they are on when the
// scheduler hands them an op.
//
// CurrentThreadId(): team k's helper i is i; the leader of team j running a
// stolen block is T_k + (j < k ? j : j - 1) (distinct, below NumThreads(),
// as Eigen and oneDNN require of pool threads); -1 elsewhere, notably on
// team k's leader, which oneDNN must not mistake for a nested parallel call.
//
// It derives from TensorFlow's ThreadPoolInterface (an Eigen interface) only
// so a RenamedDevice can take it. It owns no threads.
//
// Thread-safety: thread-safe. The scheduler and `own` must outlive it (the
// TeamSet destroys the pools last, and no kernel runs then).
#ifndef GRAPHI_TF_CC_TEAMS_WORK_CONSERVING_POOL_H_
#define GRAPHI_TF_CC_TEAMS_WORK_CONSERVING_POOL_H_

#include <functional>

#include "cc/teams/scheduler.h"
#include "cc/teams/team_thread_pool.h"
#include "tensorflow/core/platform/threadpool_interface.h"

namespace graphi {

class WorkConservingPool final : public tensorflow::thread::ThreadPoolInterface {
 public:
  // `total_threads`: the cores of every team of the layout.
  WorkConservingPool(int team, TeamThreadPool* own, Scheduler* scheduler, int total_threads);

  void Schedule(std::function<void()> fn) override;
  // Hints name threads of the whole range; a block may run on any of them.
  void ScheduleWithHint(std::function<void()> fn, int start, int end) override;
  void Cancel() override;
  int NumThreads() const override { return num_threads_; }
  int CurrentThreadId() const override;

 private:
  const int team_;
  TeamThreadPool* const own_;
  Scheduler* const scheduler_;
  const int num_threads_;
};

}  // namespace graphi

#endif  // GRAPHI_TF_CC_TEAMS_WORK_CONSERVING_POOL_H_
