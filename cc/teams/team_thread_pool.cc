#include "cc/teams/team_thread_pool.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <cstdio>

#include "cc/teams/eigen_environment.h"
#include "cc/teams/scheduler.h"
#include "cc/platform/float_environment.h"
#include "cc/platform/thread_affinity.h"

namespace graphi {

// Eigen's pool creates its threads through an Environment; ours pins helper
// i to the team's core i and names it.
struct TeamThreadPool::PinnedEnvironment : EigenEnvironmentBase {
  struct Shared {
    int team = 0;
    std::vector<int> cpus;
    Scheduler* scheduler = nullptr;
    std::string name_prefix;
    std::atomic<int> next_helper{0};
    // Counts helpers that have started (pinned, named, registered).
    std::mutex started_mu;
    std::condition_variable started_cv;
    int started = 0;
  };
  std::shared_ptr<Shared> shared;

  EnvThread* CreateThread(std::function<void()> f) {
    std::shared_ptr<Shared> s = shared;
    const int helper = s->next_helper.fetch_add(1);
    return new EnvThread([s, helper, f = std::move(f)]() {
      const int cpu = s->cpus[helper % s->cpus.size()];
      std::string error;
      if (!PinCurrentThread({cpu}, &error)) {
        fprintf(stderr, "graphi_tf: could not pin team %d helper: %s\n", s->team,
                error.c_str());
      }
      NameCurrentThread(s->name_prefix + "-e" + std::to_string(s->team) + "-h" +
                        std::to_string(helper));
      MarkCurrentThreadAsGraphi();
      UseKernelFloatEnvironment();
      if (s->scheduler != nullptr) s->scheduler->RegisterHelperThread(s->team);
      {
        std::lock_guard<std::mutex> l(s->started_mu);
        ++s->started;
        s->started_cv.notify_all();
      }
      f();
    });
  }
};

TeamThreadPool::TeamThreadPool(int team, std::vector<int> cpus, Scheduler* scheduler,
                               const std::string& name_prefix)
    : num_threads_(static_cast<int>(std::max<size_t>(cpus.size(), 1))) {
  PinnedEnvironment env;
    env.shared = std::make_shared<PinnedEnvironment::Shared>();
    env.shared->team = team;
    env.shared->cpus = std::move(cpus);
    env.shared->scheduler = scheduler;
    env.shared->name_prefix = name_prefix;
  // No spinning: helper 0 shares the leader's core, and a helper spinning
  // there after its block would slow the leader's next (inline) op. Measured
  // on the LSTM step: spinning changed nothing within noise.
  helpers_ = std::make_unique<Eigen::ThreadPoolTempl<PinnedEnvironment>>(
      num_threads_, /*allow_spinning=*/false, env);
  // Return only once every helper has registered with the scheduler: a
  // helper that the OS starts late must not reach a scheduler that a quick
  // re-partition has already destroyed.
  std::unique_lock<std::mutex> l(env.shared->started_mu);
  env.shared->started_cv.wait(l, [&] { return env.shared->started == num_threads_; });
}

TeamThreadPool::~TeamThreadPool() = default;

void TeamThreadPool::Schedule(std::function<void()> fn) {
  helpers_->Schedule(std::move(fn));
}

void TeamThreadPool::ScheduleWithHint(std::function<void()> fn, int start, int end) {
  const int helpers = num_threads_;
  const int first = std::min(std::max(start, 0), helpers - 1);
  const int limit = std::max(first + 1, std::min(end, helpers));
  helpers_->ScheduleWithHint(std::move(fn), first, limit);
}

void TeamThreadPool::Cancel() { helpers_->Cancel(); }

int TeamThreadPool::CurrentThreadId() const { return helpers_->CurrentThreadId(); }

}  // namespace graphi
