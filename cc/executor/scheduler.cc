#include "cc/executor/scheduler.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "cc/executor/thread_affinity.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define GRAPHI_CPU_RELAX() _mm_pause()
#else
#define GRAPHI_CPU_RELAX() std::this_thread::yield()
#endif

namespace graphi {
namespace {

struct CurrentWorkerInfo {
  Scheduler* scheduler = nullptr;
  int team = -1;
};
thread_local CurrentWorkerInfo tls_worker;

}  // namespace

struct Scheduler::Worker {
  int team = 0;
  int index_in_team = 0;        // 0 = leader, >0 = substitute
  Worker* parent = nullptr;     // the blocked worker a substitute stands in for
  uint64_t parent_tasks_at_spawn = 0;
  std::thread thread;
  clockid_t cpu_clock = CLOCK_THREAD_CPUTIME_ID;
  bool clock_ready = false;     // guarded by mu_

  // Guarded by Scheduler::mu_.
  ReadyTask slot;
  bool slot_full = false;
  bool idle = false;
  bool running = false;
  bool retired = false;
  uint64_t tasks_started = 0;

  // Lock-free peek for the spinning phase of WaitForSlot.
  std::atomic<bool> has_task{false};

  // Sleep/wake for this worker only.
  std::mutex wake_mu;
  std::condition_variable wake_cv;
  bool sleeping = false;  // guarded by wake_mu
};

struct Scheduler::TeamState {
  std::vector<Worker*> workers;          // leader first, then substitutes
  std::vector<clockid_t> helper_clocks;  // the team's intra-op threads
  int substitutes = 0;
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
  std::lock_guard<std::mutex> l(mu_);
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
    std::lock_guard<std::mutex> l(mu_);
    shutdown_.store(true);
    for (auto& w : workers_) all.push_back(w.get());
    watchdog_cv_.notify_all();
  }
  for (Worker* w : all) Wake(w);
  watchdog_.join();
  for (Worker* w : all) {
    if (w->thread.joinable()) w->thread.join();
  }
}

void Scheduler::StartWorker(int team, Worker* parent) {
  auto worker = std::make_unique<Worker>();
  Worker* w = worker.get();
  TeamState& ts = *teams_[team];
  w->team = team;
  w->index_in_team = static_cast<int>(ts.workers.size());
  w->parent = parent;
  if (parent != nullptr) w->parent_tasks_at_spawn = parent->tasks_started;
  ts.workers.push_back(w);
  workers_.push_back(std::move(worker));
  w->thread = std::thread([this, w] { WorkerLoop(w); });
}

void Scheduler::Submit(ReadyTask task) {
  Worker* target = nullptr;
  {
    std::lock_guard<std::mutex> l(mu_);
    task.seq = next_seq_++;
    if (!idle_.empty()) {
      target = idle_.back();
      idle_.pop_back();
      target->idle = false;
      target->slot = std::move(task);
      target->slot_full = true;
      target->has_task.store(true, std::memory_order_release);
    } else {
      queue_->Push(std::move(task));
      if (watchdog_sleeping_) watchdog_cv_.notify_one();
    }
  }
  if (target != nullptr) Wake(target);
}

void Scheduler::Wake(Worker* w) {
  std::lock_guard<std::mutex> l(w->wake_mu);
  if (w->sleeping) w->wake_cv.notify_one();
}

void Scheduler::WaitForSlot(Worker* w) {
  // Only leaders steal: a substitute stands in for a blocked leader and must
  // stay ready for the queue.
  const bool thief = options_.work_conserving && w->parent == nullptr && num_teams() > 1;
  auto can_steal = [&] { return thief && steal_.HasWorkFor(w->team); };
  auto done = [&] {
    return w->has_task.load(std::memory_order_acquire) || shutdown_.load();
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
      if ((i & 63) == 63 && MonotonicNowNs() > deadline) break;
      GRAPHI_CPU_RELAX();
    }
    if (done()) break;
    if (!steal) {
      std::unique_lock<std::mutex> l(w->wake_mu);
      w->sleeping = true;
      w->wake_cv.wait(l, [&] { return done() || can_steal(); });
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
  // The worker we stand in for is no longer inside the task it was blocked
  // in: the team has its thread back.
  return p->retired || !p->running || p->tasks_started != w->parent_tasks_at_spawn;
}

void Scheduler::WorkerLoop(Worker* w) {
  tls_worker.scheduler = this;
  tls_worker.team = w->team;
  MarkCurrentThreadAsGraphi();
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
  std::unique_lock<std::mutex> l(mu_);
  w->cpu_clock = CurrentThreadCpuClock();
  w->clock_ready = true;
  for (;;) {
    if (shutdown_.load()) break;
    ReadyTask task;
    if (w->slot_full) {
      task = std::move(w->slot);
      w->slot = ReadyTask();
      w->slot_full = false;
      w->has_task.store(false, std::memory_order_relaxed);
    } else if (ShouldRetire(w)) {
      w->retired = true;
      break;
    } else if (!queue_->Pop(&task)) {
      w->idle = true;
      idle_.push_back(w);
      l.unlock();
      WaitForSlot(w);
      l.lock();
      continue;
    }
    w->running = true;
    ++w->tasks_started;
    ++teams_[w->team]->tasks_run;
    l.unlock();
    task.run(w->team);
    task.run = nullptr;  // release captures outside the lock
    l.lock();
    w->running = false;
  }
  if (w->idle) {
    idle_.erase(std::remove(idle_.begin(), idle_.end(), w), idle_.end());
    w->idle = false;
  }
  w->retired = true;
}

void Scheduler::RegisterHelperThread(int team) {
  clockid_t clock = CurrentThreadCpuClock();
  std::lock_guard<std::mutex> l(mu_);
  if (team >= 0 && team < static_cast<int>(teams_.size())) {
    teams_[team]->helper_clocks.push_back(clock);
  }
}

std::vector<uint64_t> Scheduler::tasks_run_per_team() const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<uint64_t> out;
  for (const auto& t : teams_) out.push_back(t->tasks_run);
  return out;
}

int Scheduler::CurrentTeam() { return tls_worker.team; }
Scheduler* Scheduler::Current() { return tls_worker.scheduler; }

int64_t Scheduler::TeamCpuNs(const TeamState& team) {
  int64_t total = 0;
  for (const Worker* w : team.workers) {
    if (!w->retired && w->clock_ready) total += ReadCpuClockNs(w->cpu_clock);
  }
  for (clockid_t c : team.helper_clocks) total += ReadCpuClockNs(c);
  return total;
}

void Scheduler::CheckStalls(int64_t now) {
  for (size_t k = 0; k < teams_.size(); ++k) {
    TeamState& ts = *teams_[k];
    bool all_busy = true;
    Worker* newest = nullptr;
    for (Worker* w : ts.workers) {
      if (w->retired) continue;
      if (!w->running || w->slot_full) all_busy = false;
      newest = w;
    }
    // A team whose op's blocks are being run by other teams' leaders is
    // waiting for them, not blocked.
    if (!all_busy || newest == nullptr || queue_->empty() ||
        steal_.RunningFor(static_cast<int>(k)) > 0) {
      ts.watching = false;
      continue;
    }
    uint64_t tasks = 0;
    for (Worker* w : ts.workers) tasks += w->tasks_started;
    if (!ts.watching || tasks != ts.watch_start_tasks) {
      ts.watching = true;
      ts.watch_start_ns = now;
      ts.watch_start_cpu_ns = TeamCpuNs(ts);
      ts.watch_start_tasks = tasks;
      continue;
    }
    const int64_t elapsed = now - ts.watch_start_ns;
    if (elapsed < options_.stall_window_ns) continue;
    const int64_t cpu = TeamCpuNs(ts) - ts.watch_start_cpu_ns;
    if (cpu < static_cast<int64_t>(options_.stall_cpu_fraction * elapsed)) {
      // The team is parked inside a blocking kernel while work waits.
      ++ts.substitutes;
      substitutes_started_.fetch_add(1);
      StartWorker(static_cast<int>(k), newest);
    }
    ts.watching = false;
  }
}

void Scheduler::WatchdogLoop() {
  NameCurrentThread(options_.thread_name_prefix + "-watch");
  std::unique_lock<std::mutex> l(mu_);
  const auto tick = std::chrono::nanoseconds(
      std::max<int64_t>(options_.stall_window_ns / 4, 1000000));
  while (!shutdown_.load()) {
    if (queue_->empty()) {
      watchdog_sleeping_ = true;
      watchdog_cv_.wait(l, [&] { return shutdown_.load() || !queue_->empty(); });
      watchdog_sleeping_ = false;
      continue;
    }
    watchdog_cv_.wait_for(l, tick);
    if (shutdown_.load()) break;
    CheckStalls(MonotonicNowNs());
  }
}

}  // namespace graphi
