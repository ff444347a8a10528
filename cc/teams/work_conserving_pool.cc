#include "cc/teams/work_conserving_pool.h"

#include <utility>

#include "cc/teams/steal_list.h"

namespace graphi {

WorkConservingPool::WorkConservingPool(int team, TeamThreadPool* own, Scheduler* scheduler,
                                       int total_threads)
    : team_(team), own_(own), scheduler_(scheduler), num_threads_(total_threads) {}

void WorkConservingPool::Schedule(std::function<void()> fn) {
  scheduler_->OfferBlock(team_, std::move(fn));
}

void WorkConservingPool::ScheduleWithHint(std::function<void()> fn, int /*start*/,
                                          int /*end*/) {
  scheduler_->OfferBlock(team_, std::move(fn));
}

void WorkConservingPool::Cancel() { own_->Cancel(); }

int WorkConservingPool::CurrentThreadId() const {
  const int own = own_->CurrentThreadId();
  if (own >= 0) return own;
  const int thief = StealList::CurrentThief();
  if (thief < 0 || thief == team_) return -1;
  return own_->NumThreads() + (thief < team_ ? thief : thief - 1);
}

}  // namespace graphi
