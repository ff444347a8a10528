// CallerQueue: the work queue of a caller-driven step.
//
// A caller-driven step (GraphiExecutor::Run from one of GRAPHI's own
// threads, or a step that asks for run_all_kernels_inline) runs every op on
// the thread that called Run. Ops that become ready on other threads (an
// async kernel completing on a helper, a _Recv's sender) are pushed here,
// and the caller runs them in Drain() until the step reports its status.
//
// Owned by the caller; outlives the step (Finish is the step's last act).
//
// Thread-safety: Push and Finish may be called from any thread; Drain from
// the owning thread only. Memory ordering: work pushed happens-before it
// runs, and everything before Finish happens-before Drain returns (both go
// through `mu_`).
#ifndef GRAPHI_TF_CC_TEAMS_CALLER_QUEUE_H_
#define GRAPHI_TF_CC_TEAMS_CALLER_QUEUE_H_

#include <deque>
#include <functional>
#include <utility>

#include "absl/status/status.h"
#include "cc/util/check.h"
#include "cc/util/mutex.h"

namespace graphi {

class CallerQueue {
 public:
  // Queues `work` for the draining thread.
  void Push(std::function<void()> work) {
    MutexLock l(&mu_);
    work_.push_back(std::move(work));
    cv_.Signal();
  }

  // Ends the step with `status`; called exactly once, after the last Push.
  void Finish(const absl::Status& status) {
    MutexLock l(&mu_);
    GRAPHI_DCHECK(!finished_);
    status_ = status;
    finished_ = true;
    cv_.Signal();
  }

  // Runs queued work on the calling thread until the step finishes; returns
  // the step's status.
  absl::Status Drain() {
    mu_.Lock();
    for (;;) {
      while (!finished_ && work_.empty()) cv_.Wait(&mu_);
      if (work_.empty()) {  // finished and nothing left
        absl::Status status = status_;
        mu_.Unlock();
        return status;
      }
      std::function<void()> work = std::move(work_.front());
      work_.pop_front();
      mu_.Unlock();
      work();
      work = nullptr;  // release its captures outside the lock too
      mu_.Lock();
    }
  }

 private:
  Mutex mu_;
  CondVar cv_;
  std::deque<std::function<void()>> work_ GRAPHI_GUARDED_BY(mu_);
  bool finished_ GRAPHI_GUARDED_BY(mu_) = false;
  absl::Status status_ GRAPHI_GUARDED_BY(mu_);
};

}  // namespace graphi

#endif  // GRAPHI_TF_CC_TEAMS_CALLER_QUEUE_H_
