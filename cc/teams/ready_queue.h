// Ready-op ordering policies for the GRAPHI scheduler.
//
// A ReadyQueue holds ops that are ready to run but not yet handed to an
// executor team. The policy decides which one goes next when a team frees up:
//
//   * kFifo               first submitted, first served (TensorFlow-like);
//   * kCriticalPathFirst  the oldest step's ops first (step_order, see
//                         step_order.h: concurrent requests are not starved
//                         by later ones), and within a step highest rank
//                         first (rank = profiled remaining critical-path
//                         time to the sink, paper §4.3); equal ranks fall
//                         back to submission order, so with no profile (all
//                         ranks 0) and one step it behaves exactly like kFifo.
//
// Free of TensorFlow types so the policy can be unit-tested and driven by a
// simulated clock.
//
// Thread-safety: thread-compatible. The Scheduler serialises all calls under
// its own mutex.
#ifndef GRAPHI_TF_CC_TEAMS_READY_QUEUE_H_
#define GRAPHI_TF_CC_TEAMS_READY_QUEUE_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace graphi {

// One ready op. `run(team)` executes it on team `team` (the calling worker's
// team index).
struct ReadyTask {
  std::function<void(int team)> run;
  int64_t rank = 0;         // larger = more urgent under kCriticalPathFirst
  uint64_t step_order = 0;  // the op's step's arrival; smaller = older (first)
  uint64_t seq = 0;         // submission order, assigned by the Scheduler
};

enum class ReadyPolicy { kFifo, kCriticalPathFirst };

// Returns "fifo" / "critical_path_first".
const char* ReadyPolicyName(ReadyPolicy policy);
// Parses a policy name; returns false on an unknown name.
bool ParseReadyPolicy(const std::string& name, ReadyPolicy* policy);

class ReadyQueue {
 public:
  virtual ~ReadyQueue() = default;
  virtual void Push(ReadyTask task) = 0;
  // Moves the next task into *task. Returns false if the queue is empty.
  virtual bool Pop(ReadyTask* task) = 0;
  virtual size_t size() const = 0;
  bool empty() const { return size() == 0; }
};

class FifoReadyQueue final : public ReadyQueue {
 public:
  void Push(ReadyTask task) override { tasks_.push_back(std::move(task)); }
  bool Pop(ReadyTask* task) override;
  size_t size() const override { return tasks_.size(); }

 private:
  std::deque<ReadyTask> tasks_;
};

class RankFirstReadyQueue final : public ReadyQueue {
 public:
  void Push(ReadyTask task) override;
  bool Pop(ReadyTask* task) override;
  size_t size() const override { return heap_.size(); }

 private:
  // Max-heap on (-step_order, rank, -seq).
  static bool Before(const ReadyTask& a, const ReadyTask& b);
  std::vector<ReadyTask> heap_;
};

std::unique_ptr<ReadyQueue> NewReadyQueue(ReadyPolicy policy);

}  // namespace graphi

#endif  // GRAPHI_TF_CC_TEAMS_READY_QUEUE_H_
