// The devices an executor's kernels see on each team.
//
// For every team of a TeamSet, one RenamedDevice wraps the executor's device
// with the team's pinned TeamThreadPool as its CPU worker pool, so a kernel's
// intra-op work (Eigen, Shard, oneDNN) runs on its team's cores only. The
// renamed device keeps the device's name, allocator, resource manager and
// Compute, so rendezvous keys, variables and kernels are unaffected.
// With several teams each team also has a device over its work-conserving
// pool (WorkConservingPool), for an op whose blocks idle teams may take.
// Built once per (executor, TeamSet), not per step.
//
// It does not own the TeamSet: its devices are valid while the set lives,
// and a step holds the set beside them (GraphiExecutor::CurrentTeamDevices).
// So an executor's cached TeamDevices never keeps threads the Runtime has
// let go of (runtime.h), e.g. an executor last run while the autotuner
// visited a layout; a new set never matches it (generation()).
//
// Thread-safety: immutable after construction.
#ifndef GRAPHI_TF_CC_EXECUTOR_TEAM_DEVICES_H_
#define GRAPHI_TF_CC_EXECUTOR_TEAM_DEVICES_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "cc/teams/team_set.h"
#include "tensorflow/core/common_runtime/device.h"

namespace graphi {

class TeamDevices {
 public:
  TeamDevices(tensorflow::Device* device, TeamSet* teams);

  // The set these devices are on; only to be used while a holder of the set
  // (the step) keeps it.
  TeamSet* teams() const { return teams_; }
  // Its generation, which no later set shares (even at the same address).
  uint64_t generation() const { return generation_; }
  // The device for kernels run by team `team`; the base device for -1.
  tensorflow::Device* device(int team) const {
    return team < 0 ? base_ : per_team_[team].get();
  }
  // Team `team`'s device over its work-conserving pool (idle teams' leaders
  // may run the op's blocks); null with one team.
  tensorflow::Device* wide_device(int team) const {
    return wide_.empty() ? nullptr : wide_[team].get();
  }

 private:
  tensorflow::Device* const base_;
  TeamSet* const teams_;
  const uint64_t generation_;
  std::vector<std::unique_ptr<tensorflow::Device>> per_team_;
  std::vector<std::unique_ptr<tensorflow::Device>> wide_;
};

}  // namespace graphi

#endif  // GRAPHI_TF_CC_EXECUTOR_TEAM_DEVICES_H_
