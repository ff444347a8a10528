// One generation of executor teams: the pinned leaders (Scheduler workers),
// each team's pinned intra-op pool, and the layout they were built from.
//
// The Runtime swaps in a new TeamSet when the layout changes; running steps
// keep the TeamSet they started on alive through a shared_ptr, so a layout
// change never disturbs a step in flight and needs no process restart.
//
// Thread-safety: immutable after construction except through the Scheduler,
// which is thread-safe.
#ifndef GRAPHI_TF_CC_TEAMS_TEAM_SET_H_
#define GRAPHI_TF_CC_TEAMS_TEAM_SET_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "cc/teams/ready_queue.h"
#include "cc/teams/scheduler.h"
#include "cc/teams/team_layout.h"
#include "cc/teams/team_thread_pool.h"
#include "cc/teams/work_conserving_pool.h"

namespace graphi {

class TeamSet {
 public:
  // Starts the threads of `layout`. The returned pointer may be released on
  // any thread, including one of this set's own workers: destruction (which
  // joins the workers) is then moved to a short-lived thread of its own.
  static std::shared_ptr<TeamSet> Create(const TeamLayout& layout, ReadyPolicy policy,
                                         uint64_t generation);

  ~TeamSet();

  const TeamLayout& layout() const { return layout_; }
  uint64_t generation() const { return generation_; }
  int num_teams() const { return static_cast<int>(pools_.size()); }
  Scheduler& scheduler() { return *scheduler_; }
  TeamThreadPool* team_pool(int team) { return pools_[team].get(); }
  // Team `team`'s pool for an op other teams' idle leaders may help with
  // (work conservation); null with a single team.
  WorkConservingPool* work_conserving_pool(int team) {
    return wc_pools_.empty() ? nullptr : wc_pools_[team].get();
  }

 private:
  TeamSet(const TeamLayout& layout, ReadyPolicy policy, uint64_t generation);

  const TeamLayout layout_;
  const uint64_t generation_;
  std::unique_ptr<Scheduler> scheduler_;
  std::vector<std::unique_ptr<TeamThreadPool>> pools_;
  std::vector<std::unique_ptr<WorkConservingPool>> wc_pools_;  // refer to pools_
};

}  // namespace graphi

#endif  // GRAPHI_TF_CC_TEAMS_TEAM_SET_H_
