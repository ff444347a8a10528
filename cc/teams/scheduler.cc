#include "cc/teams/scheduler.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "cc/platform/float_environment.h"
#include "cc/platform/thread_affinity.h"
#include "cc/util/check.h"
#include "cc/util/clock.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define GRAPHI_CPU_RELAX() _mm_pause()
#else
#define GRAPHI_CPU_RELAX() std::this_thread::yield()
#endif

namespace graphi {
namespace {

// A spinning worker reads the clock (for its spin deadline), and yields to
// any other runnable thread of its core, once every this many spins (a few
// microseconds), so that the loop mostly pauses.
constexpr int kSpinsPerClockRead = 64;

// The watchdog checks for stalls four times per stall window, but never
// more often than every this many ns (a tiny window would make it spin).
constexpr int64_t kMinWatchdogTickNs = 1000 * 1000;

struct CurrentWorkerInfo {
  Scheduler* scheduler = nullptr;
  int team = -1;
};
thread_local CurrentWorkerInfo tls_worker;

}  // namespace

struct Scheduler::Worker {
  explicit Worker(Mutex* mu) : scheduler_mu(mu) {}

  // Tells the lock analysis that the fields below are guarded by the lock
  // the caller holds (`held`, the Scheduler's mu_), which it cannot see is
  // `scheduler_mu`; debug builds check that it is. Every Scheduler function
  // that reads or writes them calls this first, under mu_.
  void AssertGuardHeld(Mutex* held) const GRAPHI_EXCLUSIVE_LOCKS_REQUIRED(held)
      GRAPHI_ASSERT_EXCLUSIVE_LOCK(scheduler_mu) {
    GRAPHI_DCHECK(held == scheduler_mu);
  }

  Mutex* const scheduler_mu;    // the Scheduler's mu_
  int team = 0;
  int index_in_team = 0;        // 0 = leader, >0 = substitute
  Worker* parent = nullptr;     // the blocked worker a substitute stands in for
  uint64_t parent_tasks_at_spawn = 0;
  std::thread thread;
  clockid_t cpu_clock = CLOCK_THREAD_CPUTIME_ID;
  int tid = 0;  // set with cpu_clock

  bool clock_ready GRAPHI_GUARDED_BY(scheduler_mu) = false;
  ReadyTask slot GRAPHI_GUARDED_BY(scheduler_mu);
  bool slot_full GRAPHI_GUARDED_BY(scheduler_mu) = false;
  bool idle GRAPHI_GUARDED_BY(scheduler_mu) = false;
  bool running GRAPHI_GUARDED_BY(scheduler_mu) = false;
  bool retired GRAPHI_GUARDED_BY(scheduler_mu) = false;
  uint64_t tasks_started GRAPHI_GUARDED_BY(scheduler_mu) = 0;

  // Lock-free peek for the spinning phase of WaitForSlot.
  std::atomic<bool> has_task{false};
  // Set (under Scheduler::mu_, as the worker leaves the idle list) when an
  // idle substitute's blocked worker is back: it stops waiting and retires.
  std::atomic<bool> retire_requested{false};

  // Sleep/wake for this worker only.
  Mutex wake_mu;
  CondVar wake_cv;
  bool sleeping GRAPHI_GUARDED_BY(wake_mu) = false;
};

// Guarded by Scheduler::mu_.
struct Scheduler::TeamState {
  std::vector<Worker*> workers;          // leader first, then substitutes
  std::vector<clockid_t> helper_clocks;  // the team's intra-op threads
  std::vector<int> helper_tids;          // the same threads' ids
  uint64_t tasks_run = 0;
  // Stall detection window.
  bool watching = false;
  int64_t watch_start_ns = 0;
  int64_t watch_start_cpu_ns = 0;
  uint64_t watch_start_tasks = 0;
};

Scheduler::Scheduler(Options options)
    : options_(std::move(options)),
      steal_(static_cast<int>(options_.team_cpus.size())),
      queue_(NewReadyQueue(options_.policy)) {
  MutexLock l(&mu_);
  for (size_t k = 0; k < options_.team_cpus.size(); ++k) {
    teams_.push_back(std::make_unique<TeamState>());
  }
  for (size_t k = 0; k < options_.team_cpus.size(); ++k) {
    StartWorker(static_cast<int>(k), nullptr);
    leaders_.push_back(teams_[k]->workers[0]);
  }
  watchdog_ = std::thread([this] { WatchdogLoop(); });
}

Scheduler::~Scheduler() {
  std::vector<Worker*> all;
  {
    MutexLock l(&mu_);
    shutdown_.store(true);
    for (auto& w : workers_) all.push_back(w.get());
    watchdog_cv_.SignalAll();
  }
  for (Worker* w : all) Wake(w);
  watchdog_.join();
  for (Worker* w : all) {
    if (w->thread.joinable()) w->thread.join();
  }
  std::vector<std::unique_ptr<Worker>> reaped;
  {
    MutexLock l(&mu_);
    reaped = std::move(reaped_);
  }
  JoinReaped(std::move(reaped));
}

void Scheduler::StartWorker(int team, Worker* parent) {
  auto worker = std::make_unique<Worker>(&mu_);
  Worker* w = worker.get();
  w->AssertGuardHeld(&mu_);
  TeamState& ts = *teams_[team];
  w->team = team;
  w->index_in_team = static_cast<int>(ts.workers.size());
  w->parent = parent;
  if (parent != nullptr) {
    parent->AssertGuardHeld(&mu_);
    w->parent_tasks_at_spawn = parent->tasks_started;
  }
  ts.workers.push_back(w);
  workers_.push_back(std::move(worker));
  w->thread = std::thread([this, w] { WorkerLoop(w); });
}

void Scheduler::Submit(ReadyTask task) {
  Worker* target = nullptr;
  bool woken = false;
  {
    MutexLock l(&mu_);
    task.seq = next_seq_++;
    if (!idle_.empty()) {
      target = idle_.back();
      idle_.pop_back();
      target->AssertGuardHeld(&mu_);
      // An idle worker's slot is empty: only Submit fills it, and it takes
      // the worker off the idle list as it does.
      GRAPHI_DCHECK(target->idle && !target->slot_full);
      target->idle = false;
      target->slot = std::move(task);
      target->slot_full = true;
      target->has_task.store(true, std::memory_order_release);
      // A substitute may see the task while spinning, run it, retire and be
      // freed by the watchdog (ReapRetiredSubstitutesLocked) as soon as mu_
      // is released, so it is woken while mu_ pins it (lock order: mu_, then
      // wake_mu). Leaders live as long as the Scheduler: they are woken after
      // the unlock, so the woken thread does not wait for mu_.
      if (target->parent != nullptr) {
        Wake(target);
        woken = true;
      }
    } else {
      queue_->Push(std::move(task));
      if (watchdog_sleeping_) watchdog_cv_.Signal();
    }
  }
  if (target != nullptr && options_.after_handoff_for_test) options_.after_handoff_for_test();
  if (target != nullptr && !woken) Wake(target);
}

void Scheduler::Wake(Worker* w) {
  MutexLock l(&w->wake_mu);
  if (w->sleeping) w->wake_cv.Signal();
}

void Scheduler::WaitForSlot(Worker* w) {
  // Only leaders steal: a substitute stands in for a blocked leader and must
  // stay ready for the queue.
  const bool thief = options_.work_conserving && w->parent == nullptr && num_teams() > 1;
  auto can_steal = [&] { return thief && steal_.HasWorkFor(w->team); };
  auto done = [&] {
    return w->has_task.load(std::memory_order_acquire) || shutdown_.load() ||
           w->retire_requested.load(std::memory_order_acquire);
  };
  if (thief) steal_.BeginStealing(w->team);
  for (;;) {
    const int64_t deadline = MonotonicNowNs() + options_.spin_ns;
    bool steal = false;
    for (int i = 0;; ++i) {
      if (done()) break;
      if (can_steal()) {
        steal = true;
        break;
      }
      if (i % kSpinsPerClockRead == kSpinsPerClockRead - 1) {
        if (MonotonicNowNs() > deadline) break;
        // A thread woken on this core (the caller, a client, a kernel's
        // helper) runs now rather than when the scheduler preempts the spin.
        std::this_thread::yield();
      }
      GRAPHI_CPU_RELAX();
    }
    if (done()) break;
    if (!steal) {
      MutexLock l(&w->wake_mu);
      w->sleeping = true;
      while (!done() && !can_steal()) w->wake_cv.Wait(&w->wake_mu);
      w->sleeping = false;
      if (done()) break;
    }
    // One block at a time, checking the slot in between: an op handed to
    // this team waits at most for the block being run.
    while (!done() && steal_.RunOne(w->team)) {
    }
    if (done()) break;
  }
  // Blocks reserved for this leader and not claimed go to their owners.
  if (thief) steal_.EndStealing(w->team);
}

void Scheduler::OfferBlock(int owner, std::function<void()> block) {
  if (!steal_.Push(owner, std::move(block))) return;
  // The block waits for a thief: wake the idle leaders of the other teams
  // (one that is not sleeping sees it while spinning).
  for (Worker* w : leaders_) {
    if (w->team != owner) Wake(w);
  }
}

std::vector<uint64_t> Scheduler::blocks_stolen_per_team() const {
  std::vector<uint64_t> out;
  for (int k = 0; k < steal_.num_teams(); ++k) out.push_back(steal_.blocks_stolen(k));
  return out;
}

std::vector<int64_t> Scheduler::stolen_ns_per_team() const {
  std::vector<int64_t> out;
  for (int k = 0; k < steal_.num_teams(); ++k) out.push_back(steal_.stolen_ns(k));
  return out;
}

bool Scheduler::ShouldRetire(const Worker* w) const {
  if (w->parent == nullptr) return false;
  const Worker* p = w->parent;
  p->AssertGuardHeld(&mu_);
  // The worker we stand in for is no longer inside the task it was blocked
  // in: the team has its thread back.
  return p->retired || !p->running || p->tasks_started != w->parent_tasks_at_spawn;
}

void Scheduler::WorkerLoop(Worker* w) {
  tls_worker.scheduler = this;
  tls_worker.team = w->team;
  MarkCurrentThreadAsGraphi();
  UseKernelFloatEnvironment();  // as TensorFlow's pool threads (float_environment.h)
  const std::vector<int>& cpus = options_.team_cpus[w->team];
  if (options_.pin_threads && !cpus.empty()) {
    std::string error;
    std::vector<int> pin = w->parent == nullptr ? std::vector<int>{cpus[0]} : cpus;
    if (!PinCurrentThread(pin, &error)) {
      fprintf(stderr, "graphi_tf: could not pin team %d worker: %s\n", w->team,
              error.c_str());
    }
  }
  NameCurrentThread(options_.thread_name_prefix + "-e" + std::to_string(w->team) +
                    (w->parent == nullptr ? std::string("-t0")
                                          : "-s" + std::to_string(w->index_in_team)));
  mu_.Lock();
  w->AssertGuardHeld(&mu_);
  w->cpu_clock = CurrentThreadCpuClock();
  w->tid = CurrentThreadTid();
  w->clock_ready = true;
  while (!shutdown_.load()) {
    ReadyTask task;
    if (!TakeTaskLocked(w, &task)) {
      if (w->retired) break;
      mu_.Unlock();
      WaitForSlot(w);
      mu_.Lock();
      continue;
    }
    w->running = true;
    ++w->tasks_started;
    ++teams_[w->team]->tasks_run;
    mu_.Unlock();
    task.run(w->team);
    task.run = nullptr;  // release captures outside the lock
    mu_.Lock();
    w->running = false;
    ReleaseSubstitutesLocked(w);
  }
  if (w->idle) {
    idle_.erase(std::remove(idle_.begin(), idle_.end(), w), idle_.end());
    w->idle = false;
  }
  w->retired = true;
  if (w->parent != nullptr) substitutes_alive_.fetch_sub(1);
  ReleaseSubstitutesLocked(w);  // a substitute standing in for `w` retires too
  mu_.Unlock();
}

void Scheduler::ReleaseSubstitutesLocked(Worker* w) {
  // A substitute checks whether its blocked worker is back only when it
  // looks for work. One that went idle before that would otherwise sleep
  // on, an extra thread pinned to the team's cores, until handed a task.
  for (Worker* sub : teams_[w->team]->workers) {
    sub->AssertGuardHeld(&mu_);
    if (sub->parent != w || sub->retired || !sub->idle) continue;
    idle_.erase(std::remove(idle_.begin(), idle_.end(), sub), idle_.end());
    sub->idle = false;
    sub->retire_requested.store(true, std::memory_order_release);
    Wake(sub);  // lock order: mu_, then a worker's wake_mu
  }
}

void Scheduler::ReapRetiredSubstitutesLocked(int team) {
  // Retired substitutes are forgotten here rather than at destruction, so
  // that a long-running process keeps neither their threads nor their
  // entries (which the watchdog walks every tick). The watchdog joins them
  // after releasing mu_ (JoinReaped): a thread's exit (thread-local
  // destructors of the kernels it ran) must not wait behind our lock. A
  // worker another live substitute stands in for stays: that substitute
  // reads it (ShouldRetire).
  std::vector<Worker*>& workers = teams_[team]->workers;
  auto is_parent_of_live = [&](const Worker* w) GRAPHI_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    for (const Worker* x : workers) {
      x->AssertGuardHeld(&mu_);
      if (x->parent == w && !x->retired) return true;
    }
    return false;
  };
  std::vector<Worker*> reaped;
  for (Worker* w : workers) {
    w->AssertGuardHeld(&mu_);
    if (w->parent != nullptr && w->retired && !is_parent_of_live(w)) reaped.push_back(w);
  }
  if (reaped.empty()) return;
  // Substitutes of a reaped worker are retired too (it is not a parent of a
  // live one): none of them reads it again.
  auto is_reaped = [&](const Worker* w) {
    return std::find(reaped.begin(), reaped.end(), w) != reaped.end();
  };
  workers.erase(std::remove_if(workers.begin(), workers.end(), is_reaped), workers.end());
  for (auto it = workers_.begin(); it != workers_.end();) {
    if (is_reaped(it->get())) {
      reaped_.push_back(std::move(*it));
      it = workers_.erase(it);
    } else {
      ++it;
    }
  }
}

void Scheduler::JoinReaped(std::vector<std::unique_ptr<Worker>> reaped) {
  for (auto& w : reaped) {
    if (w->thread.joinable()) w->thread.join();
  }
}

bool Scheduler::TakeTaskLocked(Worker* w, ReadyTask* task) {
  w->AssertGuardHeld(&mu_);
  if (w->slot_full) {
    *task = std::move(w->slot);
    w->slot = ReadyTask();
    w->slot_full = false;
    w->has_task.store(false, std::memory_order_relaxed);
    return true;
  }
  if (ShouldRetire(w)) {
    w->retired = true;
    return false;
  }
  if (queue_->Pop(task)) return true;
  GRAPHI_DCHECK(!w->idle);
  w->idle = true;
  idle_.push_back(w);
  return false;
}

void Scheduler::RegisterHelperThread(int team) {
  clockid_t clock = CurrentThreadCpuClock();
  const int tid = CurrentThreadTid();
  MutexLock l(&mu_);
  if (team >= 0 && team < static_cast<int>(teams_.size())) {
    teams_[team]->helper_clocks.push_back(clock);
    teams_[team]->helper_tids.push_back(tid);
  }
}

std::vector<uint64_t> Scheduler::tasks_run_per_team() const {
  MutexLock l(&mu_);
  std::vector<uint64_t> out;
  for (const auto& t : teams_) out.push_back(t->tasks_run);
  return out;
}

int Scheduler::CurrentTeam() { return tls_worker.team; }
Scheduler* Scheduler::Current() { return tls_worker.scheduler; }

int64_t Scheduler::TeamCpuNs(const TeamState& team) {
  int64_t total = 0;
  for (const Worker* w : team.workers) {
    w->AssertGuardHeld(&mu_);
    if (!w->retired && w->clock_ready) total += ReadCpuClockNs(w->cpu_clock);
  }
  for (clockid_t c : team.helper_clocks) total += ReadCpuClockNs(c);
  return total;
}

bool Scheduler::TeamStalledLocked(int k, int64_t now, Worker** newest) {
  TeamState& ts = *teams_[k];
  bool all_busy = true;
  *newest = nullptr;
  for (Worker* w : ts.workers) {
    w->AssertGuardHeld(&mu_);
    if (w->retired) continue;
    if (!w->running || w->slot_full) all_busy = false;
    *newest = w;
  }
  // A team whose op's blocks are being run by other teams' leaders is
  // waiting for them, not blocked.
  if (!all_busy || *newest == nullptr || queue_->empty() || steal_.RunningFor(k) > 0) {
    ts.watching = false;
    return false;
  }
  uint64_t tasks = 0;
  for (Worker* w : ts.workers) {
    w->AssertGuardHeld(&mu_);
    tasks += w->tasks_started;
  }
  if (!ts.watching || tasks != ts.watch_start_tasks) {
    ts.watching = true;
    ts.watch_start_ns = now;
    ts.watch_start_cpu_ns = TeamCpuNs(ts);
    ts.watch_start_tasks = tasks;
    return false;
  }
  const int64_t elapsed = now - ts.watch_start_ns;
  if (elapsed < options_.stall_window_ns) return false;
  const int64_t cpu = TeamCpuNs(ts) - ts.watch_start_cpu_ns;
  ts.watching = false;
  if (cpu >= static_cast<int64_t>(options_.stall_cpu_fraction * elapsed)) return false;
  // Little CPU can also mean the team's threads wait for a core on an
  // overloaded machine: they are then runnable, not blocked, and a
  // substitute on the same cores would only lengthen the run queue.
  return !TeamHasRunnableThreadLocked(ts);
}

bool Scheduler::TeamHasRunnableThreadLocked(const TeamState& team) {
  for (const Worker* w : team.workers) {
    w->AssertGuardHeld(&mu_);
    if (!w->retired && w->running && w->clock_ready && ThreadIsRunnable(w->tid)) return true;
  }
  for (int tid : team.helper_tids) {
    if (ThreadIsRunnable(tid)) return true;
  }
  return false;
}

void Scheduler::CheckStalls(int64_t now) {
  for (size_t k = 0; k < teams_.size(); ++k) {
    Worker* newest = nullptr;
    if (TeamStalledLocked(static_cast<int>(k), now, &newest)) {
      // The team is parked inside a blocking kernel while work waits.
      ReapRetiredSubstitutesLocked(static_cast<int>(k));  // `newest` is live: kept
      substitutes_started_.fetch_add(1);
      substitutes_alive_.fetch_add(1);
      StartWorker(static_cast<int>(k), newest);
    }
  }
}

void Scheduler::WatchdogLoop() {
  NameCurrentThread(options_.thread_name_prefix + "-watch");
  const int64_t tick_ns = std::max<int64_t>(options_.stall_window_ns / 4, kMinWatchdogTickNs);
  mu_.Lock();
  while (!shutdown_.load()) {
    if (queue_->empty()) {
      watchdog_sleeping_ = true;
      while (!shutdown_.load() && queue_->empty()) watchdog_cv_.Wait(&mu_);
      watchdog_sleeping_ = false;
      continue;
    }
    watchdog_cv_.WaitForNs(&mu_, tick_ns);
    if (shutdown_.load()) break;
    CheckStalls(MonotonicNowNs());
    if (!reaped_.empty()) {
      std::vector<std::unique_ptr<Worker>> reaped = std::move(reaped_);
      reaped_.clear();
      mu_.Unlock();
      JoinReaped(std::move(reaped));
      mu_.Lock();
    }
  }
  mu_.Unlock();
}

}  // namespace graphi
