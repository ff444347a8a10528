#include "cc/executor/merged_thread_pool.h"

#include <algorithm>

namespace graphi {

MergedThreadPool::MergedThreadPool(std::vector<TeamThreadPool*> team_pools)
    : pools_(std::move(team_pools)) {
  for (TeamThreadPool* pool : pools_) {
    offsets_.push_back(num_threads_);
    num_threads_ += pool->NumThreads();
  }
}

void MergedThreadPool::Schedule(std::function<void()> fn) {
  const unsigned k = next_.fetch_add(1, std::memory_order_relaxed) % pools_.size();
  pools_[k]->Schedule(std::move(fn));
}

void MergedThreadPool::ScheduleWithHint(std::function<void()> fn, int start, int end) {
  start = std::min(std::max(start, 0), num_threads_ - 1);
  // The team whose helpers hold merged index `start`.
  size_t k = pools_.size() - 1;
  while (offsets_[k] > start) --k;
  const int local_start = start - offsets_[k];
  const int local_end = std::min(end - offsets_[k], pools_[k]->NumThreads());
  pools_[k]->ScheduleWithHint(std::move(fn), local_start, std::max(local_start + 1, local_end));
}

void MergedThreadPool::Cancel() {
  for (TeamThreadPool* pool : pools_) pool->Cancel();
}

int MergedThreadPool::CurrentThreadId() const {
  for (size_t k = 0; k < pools_.size(); ++k) {
    const int id = pools_[k]->CurrentThreadId();
    if (id >= 0) return offsets_[k] + id;
  }
  return -1;
}

}  // namespace graphi
