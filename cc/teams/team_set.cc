#include "cc/teams/team_set.h"

#include <thread>

#include "cc/platform/thread_affinity.h"

namespace graphi {

TeamSet::TeamSet(const TeamLayout& layout, ReadyPolicy policy, uint64_t generation)
    : layout_(layout), generation_(generation) {
  Scheduler::Options options;
  options.team_cpus = layout.team_cpus;
  options.policy = policy;
  scheduler_ = std::make_unique<Scheduler>(std::move(options));
  for (size_t k = 0; k < layout.team_cpus.size(); ++k) {
    pools_.push_back(std::make_unique<TeamThreadPool>(
        static_cast<int>(k), layout.team_cpus[k], scheduler_.get(), "graphi"));
  }
  if (pools_.size() > 1) {
    int total = 0;
    for (auto& pool : pools_) total += pool->NumThreads();
    for (size_t k = 0; k < pools_.size(); ++k) {
      TeamThreadPool* own = pools_[k].get();
      scheduler_->steal_list().SetSink(
          static_cast<int>(k), [own](std::function<void()> block) { own->Schedule(std::move(block)); });
      wc_pools_.push_back(std::make_unique<WorkConservingPool>(static_cast<int>(k), own,
                                                               scheduler_.get(), total));
    }
  }
}

TeamSet::~TeamSet() {
  // Workers first: no kernel can be using a pool once they are gone, and no
  // thief is left to run a block.
  scheduler_.reset();
  wc_pools_.clear();
  pools_.clear();
}

std::shared_ptr<TeamSet> TeamSet::Create(const TeamLayout& layout, ReadyPolicy policy,
                                         uint64_t generation) {
  return std::shared_ptr<TeamSet>(
      new TeamSet(layout, policy, generation), [](TeamSet* set) {
        // The last reference may be dropped by a step finishing on one of
        // this set's threads (a leader, or a helper on which an async
        // kernel completed); joining that thread from itself would fail.
        if (OnGraphiThread()) {
          std::thread([set] { delete set; }).detach();
        } else {
          delete set;
        }
      });
}

}  // namespace graphi
