// The GRAPHI centralized scheduler: one ready set, one policy, one worker per
// executor team, each fed through its own one-slot buffer.
//
// Model (paper §4.3–4.4, §5.2):
//   * Every executor team has a leader worker thread. A worker owns a
//     one-slot buffer; it is either running a task, or idle and waiting on its
//     own slot (spinning for up to Options::spin_ns, then sleeping on its own
//     condition variable).
//     There is no shared queue that idle workers poll.
//   * Submit() hands a ready op straight to an idle worker's slot (the most
//     recently idled one: its cache and core are warm); if every team is busy
//     the op waits in the ready queue, ordered by the policy, and the next
//     worker to finish takes the best one. The scheduling decision is thus
//     centralized (one ready set under one lock) but made on the thread that
//     produced or finished work, so no core is spent on a scheduler thread.
//   * Blocking kernels (queue dequeues, py_function, a nested synchronous
//     function run) can park a team while the op it waits for sits in the
//     ready queue. A watchdog notices a team whose threads hold a task but
//     burn no CPU while work is queued (and none of them is runnable, i.e.
//     merely waiting for a core), and starts a substitute worker for
//     that team, pinned to the same cores, which serves the queue until the
//     blocked worker resumes. This is what makes "never a hang" hold with a
//     fixed number of pinned teams (stock TF relies on a large inter-op pool).
//   * Work conservation: an idle leader is a *thief*: while it waits for
//     its slot it takes parallel-for blocks of ops running on other teams
//     (StealList), one at a time on its own core, and checks its slot
//     between blocks, so an op it is handed waits at most one block. Blocks
//     are offered through OfferBlock() by the teams' work-conserving pools.
//
// Free of TensorFlow types.
//
// Thread-safety: Submit() may be called from any thread, concurrently.
// Memory ordering: a task's effects before Submit() happen-before its run
// (the hand-off goes through `mu_`).
#ifndef GRAPHI_TF_CC_TEAMS_SCHEDULER_H_
#define GRAPHI_TF_CC_TEAMS_SCHEDULER_H_

#include <time.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cc/teams/ready_queue.h"
#include "cc/teams/steal_list.h"
#include "cc/util/mutex.h"
#include "cc/util/thread_annotations.h"

namespace graphi {

class Scheduler {
 public:
  struct Options {
    // team_cpus[k] = cores of team k. The leader is pinned to team_cpus[k][0];
    // substitutes to all of team_cpus[k].
    std::vector<std::vector<int>> team_cpus;
    ReadyPolicy policy = ReadyPolicy::kFifo;
    // How long an idle worker spins on its slot before sleeping. Longer than
    // a caller's gap between steps (its wake-up, then the Python and C++
    // around Session.run), so that a leader idle between steps takes the
    // next one without being woken, and its vCPU does not halt. On the
    // 2-vCPU Xeon VM, 50 us left 2,000 dependent scalar ops 15-20% slower
    // than TensorFlow's pools (whose idle threads spin too); 200 us and more
    // matched them (docs/design.md, "Per-node overhead"). While spinning it
    // yields to other runnable threads of its core every few microseconds.
    int64_t spin_ns = 250 * 1000;
    // Pin worker threads (tests of the policy alone may turn it off).
    bool pin_threads = true;
    // Watchdog: a team is stalled when its workers all hold tasks, work is
    // queued, and over `stall_window_ns` the team used less than
    // `stall_cpu_fraction` of one core.
    int64_t stall_window_ns = 20 * 1000 * 1000;
    double stall_cpu_fraction = 0.1;
    // Idle leaders take other teams' parallel-for blocks (OfferBlock).
    bool work_conserving = true;
    // Prefix of worker thread names: "<prefix>-e<team>-t0" / "-s<n>".
    std::string thread_name_prefix = "graphi";
    // Tests only: Submit calls it after handing a task to an idle worker and
    // releasing the scheduler's lock, so that a test can stretch that moment
    // (the hand-off's race with the worker). Empty in production.
    std::function<void()> after_handoff_for_test;
  };

  explicit Scheduler(Options options);
  // Stops and joins every worker. Requires that no task is queued or running.
  ~Scheduler();

  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Hands `task` to an idle team, or queues it. Never blocks on a team.
  void Submit(ReadyTask task);

  int num_teams() const { return static_cast<int>(options_.team_cpus.size()); }
  const std::vector<int>& team_cpus(int team) const {
    return options_.team_cpus[team];
  }
  ReadyPolicy policy() const { return options_.policy; }

  // Lets the watchdog count the CPU time of a team's helper threads (the
  // team's intra-op pool). Call from the helper thread itself.
  void RegisterHelperThread(int team);

  // Work conservation. Offers one parallel-for block of an op run by team
  // `owner`: an idle leader of another team may run it, else it goes to the
  // sink set for `owner` in steal_list() (the team's own helpers). Runs
  // exactly once.
  void OfferBlock(int owner, std::function<void()> block);
  // Whether a leader of another team than `team` is idle and free to take
  // blocks now (a hint: it may be handed an op the next moment).
  bool IdleThiefFor(int team) const { return steal_.FreeThiefFor(team); }
  StealList& steal_list() { return steal_; }
  // Blocks of other teams' ops run by team `team`'s leader so far.
  std::vector<uint64_t> blocks_stolen_per_team() const;
  std::vector<int64_t> stolen_ns_per_team() const;

  // Number of substitute workers started so far (each one means a team was
  // found blocked with work waiting).
  uint64_t substitutes_started() const { return substitutes_started_.load(); }
  // Number of substitute workers running now: started and not yet retired
  // (a substitute retires once the worker it stands in for is back).
  int substitutes_alive() const { return substitutes_alive_.load(); }
  // Tasks run so far by each team.
  std::vector<uint64_t> tasks_run_per_team() const;

  // The team the calling thread serves for some Scheduler, or -1.
  static int CurrentTeam();
  // The Scheduler the calling thread works for, or nullptr.
  static Scheduler* Current();

 private:
  struct Worker;
  struct TeamState;

  // Starts a worker for `team`; a substitute for `parent` if non-null.
  void StartWorker(int team, Worker* parent) GRAPHI_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A worker thread: runs its slot's task or the best queued one, else idles.
  void WorkerLoop(Worker* w) GRAPHI_LOCKS_EXCLUDED(mu_);
  // Takes the next task for `w` into *task; false when `w` should idle
  // (then it is listed idle) or retire (w->retired).
  bool TakeTaskLocked(Worker* w, ReadyTask* task) GRAPHI_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // An idle worker waits for its slot, stealing blocks meanwhile (leaders).
  void WaitForSlot(Worker* w) GRAPHI_LOCKS_EXCLUDED(mu_);
  // Wakes `w` if it sleeps on its slot. A substitute must be woken with mu_
  // held: once it retires the watchdog frees it, and only mu_ stops that.
  // Leaders live as long as the Scheduler and may be woken without mu_.
  void Wake(Worker* w);
  void WatchdogLoop() GRAPHI_LOCKS_EXCLUDED(mu_);
  // Starts a substitute for every team found blocked with work waiting.
  void CheckStalls(int64_t now) GRAPHI_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether team `k` is blocked with work waiting, over the stall window.
  bool TeamStalledLocked(int k, int64_t now, Worker** newest)
      GRAPHI_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  int64_t TeamCpuNs(const TeamState& team) GRAPHI_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether a thread of the team that holds a task, or a helper, is
  // runnable (running or waiting for a cpu) rather than blocked.
  bool TeamHasRunnableThreadLocked(const TeamState& team) GRAPHI_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool ShouldRetire(const Worker* w) const GRAPHI_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Wakes the idle substitutes standing in for `w` (back from its task, or
  // retired) so that they retire.
  void ReleaseSubstitutesLocked(Worker* w) GRAPHI_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Moves team `team`'s retired substitutes that no live substitute stands
  // in for to `reaped_`, for the watchdog to join.
  void ReapRetiredSubstitutesLocked(int team) GRAPHI_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Joins `reaped` (call without mu_).
  static void JoinReaped(std::vector<std::unique_ptr<Worker>> reaped);

  const Options options_;
  // Declared before the workers' state: workers use it until joined.
  StealList steal_;
  std::vector<Worker*> leaders_;  // immutable after construction
  std::atomic<bool> shutdown_{false};
  std::atomic<uint64_t> substitutes_started_{0};
  std::atomic<int> substitutes_alive_{0};

  // Guards the ready set, the idle list and every worker's slot and state
  // (Worker's fields are GUARDED_BY its pointer to this lock; a function
  // that touches them states with Worker::AssertGuardHeld that it holds it).
  mutable Mutex mu_;
  std::unique_ptr<ReadyQueue> queue_ GRAPHI_GUARDED_BY(mu_);
  std::vector<Worker*> idle_ GRAPHI_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<Worker>> workers_ GRAPHI_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<TeamState>> teams_ GRAPHI_GUARDED_BY(mu_);
  // Retired substitutes forgotten by ReapRetiredSubstitutesLocked, not yet
  // joined.
  std::vector<std::unique_ptr<Worker>> reaped_ GRAPHI_GUARDED_BY(mu_);
  uint64_t next_seq_ GRAPHI_GUARDED_BY(mu_) = 0;

  CondVar watchdog_cv_;
  bool watchdog_sleeping_ GRAPHI_GUARDED_BY(mu_) = false;
  std::thread watchdog_;
};

}  // namespace graphi

#endif  // GRAPHI_TF_CC_TEAMS_SCHEDULER_H_
