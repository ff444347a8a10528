#include "cc/teams/ready_queue.h"

#include <algorithm>

namespace graphi {

const char* ReadyPolicyName(ReadyPolicy policy) {
  switch (policy) {
    case ReadyPolicy::kFifo:
      return "fifo";
    case ReadyPolicy::kCriticalPathFirst:
      return "critical_path_first";
  }
  return "unknown";
}

bool ParseReadyPolicy(const std::string& name, ReadyPolicy* policy) {
  if (name == "fifo") {
    *policy = ReadyPolicy::kFifo;
    return true;
  }
  if (name == "critical_path_first") {
    *policy = ReadyPolicy::kCriticalPathFirst;
    return true;
  }
  return false;
}

bool FifoReadyQueue::Pop(ReadyTask* task) {
  if (tasks_.empty()) return false;
  *task = std::move(tasks_.front());
  tasks_.pop_front();
  return true;
}

// std::*_heap keep the "largest" element first; a task is "smaller" when it
// should run later: of a later step, or of the same step with a lower rank,
// or equal rank and submitted later.
bool RankFirstReadyQueue::Before(const ReadyTask& a, const ReadyTask& b) {
  if (a.step_order != b.step_order) return a.step_order > b.step_order;
  if (a.rank != b.rank) return a.rank < b.rank;
  return a.seq > b.seq;
}

void RankFirstReadyQueue::Push(ReadyTask task) {
  heap_.push_back(std::move(task));
  std::push_heap(heap_.begin(), heap_.end(), &Before);
}

bool RankFirstReadyQueue::Pop(ReadyTask* task) {
  if (heap_.empty()) return false;
  std::pop_heap(heap_.begin(), heap_.end(), &Before);
  *task = std::move(heap_.back());
  heap_.pop_back();
  return true;
}

std::unique_ptr<ReadyQueue> NewReadyQueue(ReadyPolicy policy) {
  switch (policy) {
    case ReadyPolicy::kFifo:
      return std::make_unique<FifoReadyQueue>();
    case ReadyPolicy::kCriticalPathFirst:
      return std::make_unique<RankFirstReadyQueue>();
  }
  return std::make_unique<FifoReadyQueue>();
}

}  // namespace graphi
