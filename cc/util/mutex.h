// An annotated mutex, its scoped lock and a condition variable over it.
//
// std::mutex from libstdc++ carries no thread-safety annotations, so clang
// cannot check "guarded by" against it; this thin wrapper adds them (see
// thread_annotations.h). Abseil's absl::Mutex would do, but TensorFlow's
// shared library does not export it and the TensorFlow-free code has no
// Abseil at all.
//
// Condition waits are written as loops (`while (!ready) cv.Wait(&mu);`),
// not with predicate lambdas: clang does not know a lambda runs under the
// lock, so guarded reads inside one would not check.
//
// Thread-safety: Mutex and CondVar are thread-safe; a MutexLock belongs to
// the thread that made it.
#ifndef GRAPHI_TF_CC_UTIL_MUTEX_H_
#define GRAPHI_TF_CC_UTIL_MUTEX_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "cc/util/thread_annotations.h"

namespace graphi {

class GRAPHI_CAPABILITY("mutex") Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() GRAPHI_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() GRAPHI_UNLOCK_FUNCTION() { mu_.unlock(); }
  // Tells the analysis the lock is held where it cannot see it (no run-time
  // check: std::mutex cannot tell).
  void AssertHeld() const GRAPHI_ASSERT_EXCLUSIVE_LOCK() {}

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds `mu` from construction to destruction.
class GRAPHI_SCOPED_CAPABILITY MutexLock {
 public:
  explicit MutexLock(Mutex* mu) GRAPHI_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() GRAPHI_UNLOCK_FUNCTION() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

class CondVar {
 public:
  // Releases `mu`, waits for a notification (or a spurious wake-up) and
  // takes `mu` again.
  void Wait(Mutex* mu) GRAPHI_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> l(mu->mu_, std::adopt_lock);
    cv_.wait(l);
    l.release();
  }
  // Like Wait, for at most `timeout_ns`; returns false on timeout.
  bool WaitForNs(Mutex* mu, int64_t timeout_ns) GRAPHI_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> l(mu->mu_, std::adopt_lock);
    const bool notified =
        cv_.wait_for(l, std::chrono::nanoseconds(timeout_ns)) == std::cv_status::no_timeout;
    l.release();
    return notified;
  }
  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace graphi

#endif  // GRAPHI_TF_CC_UTIL_MUTEX_H_
