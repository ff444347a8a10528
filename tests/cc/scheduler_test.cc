// Unit tests of the Scheduler alone (no TensorFlow): hand-off to idle teams,
// queueing by policy when all teams are busy, team identity of workers, and
// the watchdog's substitutes for blocked teams, and work conservation (idle
// leaders running other teams' parallel-for blocks).
#include "cc/teams/scheduler.h"

#include "cc/platform/float_environment.h"
#include "cc/platform/thread_affinity.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace graphi {
namespace {

using std::chrono::milliseconds;

Scheduler::Options Teams(int n) {
  Scheduler::Options o;
  for (int k = 0; k < n; ++k) o.team_cpus.push_back({});  // unpinned in tests
  o.pin_threads = false;
  return o;
}

// Counts down; Wait() returns true when it reached zero before the timeout.
class Latch {
 public:
  explicit Latch(int n) : n_(n) {}
  void CountDown() {
    std::lock_guard<std::mutex> l(mu_);
    if (--n_ == 0) cv_.notify_all();
  }
  bool Wait(milliseconds timeout = milliseconds(10000)) {
    std::unique_lock<std::mutex> l(mu_);
    return cv_.wait_for(l, timeout, [&] { return n_ <= 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int n_;
};

ReadyTask MakeTask(std::function<void(int)> fn, int64_t rank = 0) {
  ReadyTask t;
  t.run = std::move(fn);
  t.rank = rank;
  return t;
}

// Polls `cond` every millisecond until it holds or `timeout` passes; returns
// its last value.
bool Eventually(const std::function<bool()>& cond, milliseconds timeout = milliseconds(10000)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!cond() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(1));
  }
  return cond();
}

// Stalls a one-team scheduler: a blocker waits (burning no CPU) until a task
// queued behind it has run, which takes a substitute, then stays `linger`
// longer in its task. Returns once the blocker is done.
void StallUntilAQueuedTaskRuns(Scheduler& s, milliseconds linger = milliseconds(0)) {
  Latch partner_ran(1), blocker_done(1);
  s.Submit(MakeTask([&](int) {
    EXPECT_TRUE(partner_ran.Wait(milliseconds(10000)));
    std::this_thread::sleep_for(linger);
    blocker_done.CountDown();
  }));
  s.Submit(MakeTask([&](int) { partner_ran.CountDown(); }));
  ASSERT_TRUE(blocker_done.Wait());
}

TEST(SchedulerTest, RunsEverySubmittedTaskExactlyOnce) {
  Scheduler s(Teams(2));
  std::atomic<int> runs{0};
  Latch done(1000);
  for (int i = 0; i < 1000; ++i) {
    s.Submit(MakeTask([&](int) {
      runs.fetch_add(1);
      done.CountDown();
    }));
  }
  ASSERT_TRUE(done.Wait());
  EXPECT_EQ(runs.load(), 1000);
}

TEST(SchedulerTest, TasksRunOnWorkersThatKnowTheirTeam) {
  Scheduler s(Teams(3));
  std::mutex mu;
  std::set<int> teams_seen;
  Latch done(300);
  for (int i = 0; i < 300; ++i) {
    s.Submit(MakeTask([&](int team) {
      EXPECT_EQ(Scheduler::Current(), &s);
      EXPECT_EQ(Scheduler::CurrentTeam(), team);
      {
        std::lock_guard<std::mutex> l(mu);
        teams_seen.insert(team);
      }
      std::this_thread::sleep_for(std::chrono::microseconds(200));
      done.CountDown();
    }));
  }
  ASSERT_TRUE(done.Wait());
  EXPECT_EQ(teams_seen, (std::set<int>{0, 1, 2}));
  EXPECT_EQ(Scheduler::Current(), nullptr);  // the test thread is no worker
}

TEST(SchedulerTest, BusyTeamsLeaveWorkQueuedInPolicyOrder) {
  Scheduler::Options o = Teams(1);
  o.policy = ReadyPolicy::kCriticalPathFirst;
  Scheduler s(o);
  // Occupy the only team, queue three ranked tasks, then release it.
  std::mutex gate_mu;
  std::condition_variable gate_cv;
  bool open = false;
  Latch started(1);
  s.Submit(MakeTask([&](int) {
    started.CountDown();
    std::unique_lock<std::mutex> l(gate_mu);
    gate_cv.wait(l, [&] { return open; });
  }));
  ASSERT_TRUE(started.Wait());
  std::vector<int> order;
  std::mutex order_mu;
  Latch done(3);
  for (int rank : {1, 3, 2}) {
    s.Submit(MakeTask([&, rank](int) {
      std::lock_guard<std::mutex> l(order_mu);
      order.push_back(rank);
      done.CountDown();
    }, rank));
  }
  {
    std::lock_guard<std::mutex> l(gate_mu);
    open = true;
  }
  gate_cv.notify_all();
  ASSERT_TRUE(done.Wait());
  EXPECT_EQ(order, (std::vector<int>{3, 2, 1}));
}

TEST(SchedulerTest, IdleTeamTakesWorkWhileAnotherIsBusy) {
  Scheduler s(Teams(2));
  Latch long_started(1), release(1), quick_done(1);
  s.Submit(MakeTask([&](int) {
    long_started.CountDown();
    release.Wait();
  }));
  ASSERT_TRUE(long_started.Wait());
  s.Submit(MakeTask([&](int) { quick_done.CountDown(); }));
  EXPECT_TRUE(quick_done.Wait(milliseconds(5000)));
  release.CountDown();
}

TEST(SchedulerTest, BlockedTeamGetsASubstituteSoQueuedWorkRuns) {
  Scheduler::Options o = Teams(1);
  o.stall_window_ns = 20 * 1000 * 1000;
  Scheduler s(o);
  // The only team blocks (no CPU) until a task queued behind it has run:
  // without a substitute this never finishes.
  Latch partner_ran(1), blocker_done(1);
  s.Submit(MakeTask([&](int) {
    EXPECT_TRUE(partner_ran.Wait(milliseconds(10000)));
    blocker_done.CountDown();
  }));
  s.Submit(MakeTask([&](int team) {
    EXPECT_EQ(team, 0);  // a substitute serves the blocked team's slot
    partner_ran.CountDown();
  }));
  ASSERT_TRUE(blocker_done.Wait());
  EXPECT_GE(s.substitutes_started(), 1u);
}

TEST(SchedulerTest, LeadersAndSubstitutesRunTasksInTensorFlowsFloatEnvironment) {
  // Kernels flush denormals on TensorFlow's pool threads; they must on ours.
  const FloatEnvironment caller = CurrentFloatEnvironment();
  ASSERT_FALSE(caller.flush_to_zero);  // so the check below cannot pass by inheritance
  Scheduler::Options o = Teams(1);
  o.stall_window_ns = 20 * 1000 * 1000;
  Scheduler s(o);
  std::mutex mu;
  std::vector<FloatEnvironment> seen;
  Latch partner_ran(1), blocker_done(1);
  s.Submit(MakeTask([&](int) {  // the leader
    {
      std::lock_guard<std::mutex> l(mu);
      seen.push_back(CurrentFloatEnvironment());
    }
    EXPECT_TRUE(partner_ran.Wait(milliseconds(10000)));
    blocker_done.CountDown();
  }));
  s.Submit(MakeTask([&](int) {  // a substitute, while the leader blocks
    {
      std::lock_guard<std::mutex> l(mu);
      seen.push_back(CurrentFloatEnvironment());
    }
    partner_ran.CountDown();
  }));
  ASSERT_TRUE(blocker_done.Wait());
  ASSERT_GE(s.substitutes_started(), 1u);
  ASSERT_EQ(seen.size(), 2u);
  for (const FloatEnvironment& env : seen) {
    EXPECT_TRUE(env.flush_to_zero);
    EXPECT_TRUE(env.denormals_are_zero);
    EXPECT_TRUE(env.round_to_nearest);
  }
}

TEST(SchedulerTest, IdleSubstituteRetiresOnceTheBlockedWorkerIsBack) {
  Scheduler::Options o = Teams(1);
  o.stall_window_ns = 20 * 1000 * 1000;
  Scheduler s(o);
  // The blocker stays in its task 100 ms after the substitute ran the
  // partner, so the substitute is idle (asleep on its slot) when the
  // blocker returns. No task follows: nothing hands the substitute work.
  StallUntilAQueuedTaskRuns(s, milliseconds(100));
  ASSERT_GE(s.substitutes_started(), 1u);
  EXPECT_TRUE(Eventually([&] { return s.substitutes_alive() == 0; }, milliseconds(5000)))
      << s.substitutes_alive() << " alive";
}

TEST(SchedulerTest, SubstitutesOfRepeatedStallsAllRetire) {
  Scheduler::Options o = Teams(1);
  o.stall_window_ns = 20 * 1000 * 1000;
  Scheduler s(o);
  // Each round blocks the team until a queued partner has run: a new
  // substitute for most rounds (a round whose blocker lands on a substitute
  // still alive needs none), and each new one joins the retired ones.
  for (int round = 0; round < 5; ++round) StallUntilAQueuedTaskRuns(s);
  EXPECT_GE(s.substitutes_started(), 1u);
  EXPECT_TRUE(Eventually([&] { return s.substitutes_alive() == 0; }, milliseconds(5000)))
      << s.substitutes_alive() << " alive";
  // The team still works.
  Latch done(1);
  s.Submit(MakeTask([&](int) { done.CountDown(); }));
  EXPECT_TRUE(done.Wait());
}

TEST(SchedulerTest, ASubstituteHandedATaskIsNotFreedBeforeTheHandOffEnds) {
  // A spinning substitute sees a task handed to it without being woken: it
  // can run the task, retire, and be freed by the watchdog while the
  // submitter is still between releasing the lock and waking it. The hook
  // holds the submitter there until that has happened; under ASan a wake-up
  // that touches the freed worker fails this test.
  Scheduler::Options o = Teams(1);
  o.stall_window_ns = 2 * 1000 * 1000;
  o.spin_ns = int64_t{10} * 1000 * 1000 * 1000;  // workers spin, never sleep
  std::atomic<bool> stretch{false};
  std::function<void()> in_the_hand_off;
  o.after_handoff_for_test = [&] {
    if (stretch.exchange(false)) in_the_hand_off();
  };
  Scheduler s(o);
  // The leader blocks until released; the partner queued behind it gets a
  // substitute, which then idles (spinning) while the leader is blocked.
  Latch release_first(1), first_done(1), partner_ran(1);
  s.Submit(MakeTask([&](int) {
    EXPECT_TRUE(release_first.Wait());
    first_done.CountDown();
  }));
  s.Submit(MakeTask([&](int) { partner_ran.CountDown(); }));
  ASSERT_TRUE(partner_ran.Wait());
  ASSERT_EQ(s.substitutes_started(), 1u);
  std::this_thread::sleep_for(milliseconds(20));  // the substitute is idle now

  Latch release_second(1), second_done(1), second_partner_ran(1);
  in_the_hand_off = [&] {
    // The substitute runs the handed task; the leader comes back, so the
    // substitute retires.
    release_first.CountDown();
    ASSERT_TRUE(first_done.Wait());
    ASSERT_TRUE(Eventually([&] { return s.substitutes_alive() == 0; }));
    // A second stall makes the watchdog reap (and free) the retired
    // substitute as it starts the next one.
    s.Submit(MakeTask([&](int) {
      EXPECT_TRUE(release_second.Wait());
      second_done.CountDown();
    }));
    s.Submit(MakeTask([&](int) { second_partner_ran.CountDown(); }));
    ASSERT_TRUE(second_partner_ran.Wait());
    std::this_thread::sleep_for(milliseconds(50));  // the watchdog joins and frees it
  };
  Latch handed_ran(1);
  stretch.store(true);
  s.Submit(MakeTask([&](int) { handed_ran.CountDown(); }));
  EXPECT_TRUE(handed_ran.Wait());
  EXPECT_EQ(s.substitutes_started(), 2u);
  release_second.CountDown();
  EXPECT_TRUE(second_done.Wait());
}

TEST(SchedulerTest, TeamStarvedOfItsCoreGetsNoSubstitute) {
  // The team's core is shared with 19 spinning threads: its computing
  // leader gets about 5% of the core, under the 10% stall threshold, but it
  // is runnable, not blocked.
  const std::vector<int> cpus = CurrentThreadAffinity();
  ASSERT_FALSE(cpus.empty());
  const int cpu = cpus[0];
  Scheduler::Options o;
  o.team_cpus = {{cpu}};
  o.stall_window_ns = 20 * 1000 * 1000;
  Scheduler s(o);
  std::atomic<bool> stop{false};
  std::vector<std::thread> hogs;
  for (int i = 0; i < 19; ++i) {
    hogs.emplace_back([&] {
      std::string error;
      PinCurrentThread({cpu}, &error);
      while (!stop.load(std::memory_order_relaxed)) {
      }
    });
  }
  Latch done(2);
  s.Submit(MakeTask([&](int) {
    auto end = std::chrono::steady_clock::now() + milliseconds(400);
    volatile uint64_t x = 0;
    while (std::chrono::steady_clock::now() < end) x = x + 1;
    done.CountDown();
  }));
  s.Submit(MakeTask([&](int) { done.CountDown(); }));
  const bool finished = done.Wait(milliseconds(20000));
  stop.store(true);
  for (auto& t : hogs) t.join();
  ASSERT_TRUE(finished);
  EXPECT_EQ(s.substitutes_started(), 0u);
}

TEST(SchedulerTest, BusyTeamThatBurnsCpuGetsNoSubstitute) {
  Scheduler::Options o = Teams(1);
  // A 50 ms window and a 2% threshold: a computing team on a loaded machine
  // (parallel tests, CI) still gets far more than 1 ms of CPU in 50 ms, while
  // a blocked one gets none.
  o.stall_window_ns = 50 * 1000 * 1000;
  o.stall_cpu_fraction = 0.02;
  Scheduler s(o);
  Latch done(2);
  s.Submit(MakeTask([&](int) {
    // Compute for ~150 ms: busy, not blocked.
    auto end = std::chrono::steady_clock::now() + milliseconds(150);
    volatile uint64_t x = 0;
    while (std::chrono::steady_clock::now() < end) x = x + 1;
    done.CountDown();
  }));
  s.Submit(MakeTask([&](int) { done.CountDown(); }));
  ASSERT_TRUE(done.Wait());
  EXPECT_EQ(s.substitutes_started(), 0u);
}

TEST(SchedulerTest, CountsTasksPerTeam) {
  Scheduler s(Teams(2));
  Latch done(50);
  for (int i = 0; i < 50; ++i) s.Submit(MakeTask([&](int) { done.CountDown(); }));
  ASSERT_TRUE(done.Wait());
  std::this_thread::sleep_for(milliseconds(20));
  uint64_t total = 0;
  for (uint64_t n : s.tasks_run_per_team()) total += n;
  EXPECT_EQ(total, 50u);
}

// Work conservation: idle leaders take other teams' parallel-for blocks.

// Waits until a leader of a team other than `team` is idle and stealing.
bool IdleThiefSoon(Scheduler& s, int team) {
  auto end = std::chrono::steady_clock::now() + milliseconds(5000);
  while (std::chrono::steady_clock::now() < end) {
    if (s.IdleThiefFor(team)) return true;
    std::this_thread::sleep_for(milliseconds(1));
  }
  return false;
}

// A team's own helpers: one thread running the blocks a StealList hands it.
class HelperThread {
 public:
  HelperThread() : thread_([this] { Loop(); }) {}
  ~HelperThread() {
    {
      std::lock_guard<std::mutex> l(mu_);
      done_ = true;
      cv_.notify_all();
    }
    thread_.join();
  }
  StealList::Sink sink() {
    return [this](StealList::Closure c) {
      std::lock_guard<std::mutex> l(mu_);
      queue_.push_back(std::move(c));
      cv_.notify_all();
    };
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> l(mu_);
    for (;;) {
      cv_.wait(l, [&] { return done_ || !queue_.empty(); });
      if (queue_.empty()) return;
      StealList::Closure c = std::move(queue_.front());
      queue_.erase(queue_.begin());
      l.unlock();
      c();
      l.lock();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<StealList::Closure> queue_;
  bool done_ = false;
  std::thread thread_;
};

TEST(SchedulerTest, AnIdleLeaderRunsABlockOfAnotherTeamsOp) {
  HelperThread helpers0, helpers1;  // outlive the scheduler
  Scheduler s(Teams(2));
  s.steal_list().SetSink(0, helpers0.sink());
  s.steal_list().SetSink(1, helpers1.sink());
  Latch ran(1);
  std::atomic<int> owner{-1}, thief{-2}, thief_team{-2};
  s.Submit(MakeTask([&](int team) {
    owner.store(team);
    ASSERT_TRUE(IdleThiefSoon(s, team));
    s.OfferBlock(team, [&] {
      thief.store(StealList::CurrentThief());
      thief_team.store(Scheduler::CurrentTeam());
      ran.CountDown();
    });
    ASSERT_TRUE(ran.Wait());
  }));
  ASSERT_TRUE(ran.Wait());
  EXPECT_EQ(thief.load(), 1 - owner.load());
  EXPECT_EQ(thief_team.load(), 1 - owner.load());
  std::this_thread::sleep_for(milliseconds(20));
  EXPECT_EQ(s.blocks_stolen_per_team()[1 - owner.load()], 1u);
}

TEST(SchedulerTest, AStealingLeaderHandedAnOpStopsAfterTheBlockItIsOn) {
  Scheduler::Options o = Teams(2);
  o.stall_window_ns = 500 * 1000 * 1000;
  HelperThread helpers0, helpers1;  // outlive the scheduler
  Scheduler s(o);
  s.steal_list().SetSink(0, helpers0.sink());
  s.steal_list().SetSink(1, helpers1.sink());
  Latch first_started(1), release(1), op_ran(1), all_blocks(6);
  std::atomic<int> op_team{-1}, later_blocks_on_thief_before_op{0};
  std::atomic<bool> op_done{false};
  int owner = -1;
  s.Submit(MakeTask([&](int team) {
    owner = team;
    ASSERT_TRUE(IdleThiefSoon(s, team));
    s.OfferBlock(team, [&] {
      first_started.CountDown();
      release.Wait();
      all_blocks.CountDown();
    });
    ASSERT_TRUE(first_started.Wait());
    // The thief is inside the first block: these go to this team's helpers
    // (and stay stealable: once the thief has run the op it may take the
    // ones the helpers have not).
    for (int i = 0; i < 5; ++i) {
      s.OfferBlock(team, [&] {
        if (StealList::CurrentThief() >= 0 && !op_done.load()) later_blocks_on_thief_before_op++;
        all_blocks.CountDown();
      });
    }
    // An op for the stealing team: it is idle, so the op goes to its slot.
    s.Submit(MakeTask([&](int t) {
      op_team.store(t);
      op_done.store(true);
      op_ran.CountDown();
    }));
    release.CountDown();
    ASSERT_TRUE(all_blocks.Wait());
  }));
  ASSERT_TRUE(op_ran.Wait());
  ASSERT_TRUE(all_blocks.Wait());
  EXPECT_EQ(op_team.load(), 1 - owner);
  EXPECT_EQ(later_blocks_on_thief_before_op.load(), 0);
}

TEST(SchedulerTest, WithoutWorkConservationNoLeaderSteals) {
  Scheduler::Options o = Teams(2);
  o.work_conserving = false;
  HelperThread helpers0, helpers1;  // outlive the scheduler
  Scheduler s(o);
  s.steal_list().SetSink(0, helpers0.sink());
  s.steal_list().SetSink(1, helpers1.sink());
  Latch ran(1);
  std::atomic<int> thief{-2};
  s.Submit(MakeTask([&](int team) {
    std::this_thread::sleep_for(milliseconds(20));  // the other leader is idle by now
    EXPECT_FALSE(s.IdleThiefFor(team));
    s.OfferBlock(team, [&] {
      thief.store(StealList::CurrentThief());
      ran.CountDown();
    });
    ASSERT_TRUE(ran.Wait());
  }));
  ASSERT_TRUE(ran.Wait());
  EXPECT_EQ(thief.load(), -1);
}

}  // namespace
}  // namespace graphi
