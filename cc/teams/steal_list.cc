#include "cc/teams/steal_list.h"

#include <utility>

#include "cc/util/check.h"
#include "cc/util/clock.h"

namespace graphi {
namespace {

thread_local int tls_thief = -1;

}  // namespace

// Outlives the StealList: an owner copy left in a helper's queue after its
// token was stolen may run after the TeamSet dropped the scheduler.
struct StealList::Counters {
  explicit Counters(int n) : unclaimed(n), running(n) {}
  std::vector<std::atomic<int>> unclaimed;  // per owner: listed, not yet claimed
  std::vector<std::atomic<int>> running;    // per owner: being run by thieves
};

struct StealList::Token {
  Closure fn;
  int owner = 0;
  std::atomic<bool> claimed{false};
  bool deferred = false;  // reserved for a thief, no owner copy; guarded by StealList::mu_
  std::shared_ptr<Counters> counters;

  // True for exactly one caller.
  bool Claim() {
    if (claimed.exchange(true, std::memory_order_acq_rel)) return false;
    counters->unclaimed[owner].fetch_sub(1, std::memory_order_relaxed);
    return true;
  }
};

StealList::StealList(int num_teams)
    : num_teams_(num_teams),
      counters_(std::make_shared<Counters>(num_teams)),
      sinks_(num_teams),
      listed_(num_teams),
      deferred_(num_teams, 0),
      state_(num_teams, 0),
      free_(num_teams),
      stolen_(num_teams),
      stolen_ns_(num_teams) {}

StealList::~StealList() = default;

void StealList::SetSink(int team, Sink sink) {
  MutexLock l(&mu_);
  sinks_[team] = std::move(sink);
}

int StealList::FreeThievesForLocked(int owner) const {
  int n = 0;
  for (int k = 0; k < num_teams_; ++k) {
    if (k != owner && state_[k] == 1) ++n;
  }
  return n;
}

void StealList::CheckInvariantLocked() const {
#ifndef NDEBUG
  for (int owner = 0; owner < num_teams_; ++owner) {
    int marked = 0;
    for (const std::shared_ptr<Token>& t : listed_[owner]) marked += t->deferred ? 1 : 0;
    // deferred_ counts the listed tokens reserved for a thief ...
    GRAPHI_DCHECK(deferred_[owner] == marked);
    // ... and never exceeds the free thieves that will claim them (the header's invariant).
    GRAPHI_DCHECK(deferred_[owner] >= 0 && deferred_[owner] <= FreeThievesForLocked(owner));
  }
  for (int team = 0; team < num_teams_; ++team) {
    GRAPHI_DCHECK(state_[team] >= 0 && state_[team] <= 2);
    GRAPHI_DCHECK(free_[team].load(std::memory_order_relaxed) == (state_[team] == 1 ? 1 : 0));
  }
#endif
}

StealList::Closure StealList::OwnerCopy(const std::shared_ptr<Token>& token) {
  return [token]() {
    if (!token->Claim()) return;  // a thief ran it
    Closure fn = std::move(token->fn);
    fn();
  };
}

bool StealList::Push(int owner, Closure block) {
  auto token = std::make_shared<Token>();
  token->fn = std::move(block);
  token->owner = owner;
  token->counters = counters_;
  Sink sink;
  bool copy = true;
  {
    MutexLock l(&mu_);
    auto& list = listed_[owner];
    while (!list.empty() && list.front()->claimed.load(std::memory_order_relaxed)) {
      list.pop_front();
    }
    list.push_back(token);
    counters_->unclaimed[owner].fetch_add(1, std::memory_order_relaxed);
    // A block pushed from a stolen block (nested parallelism) is not
    // reserved for its own thief: that thief is running (state 2), so it is
    // not counted as free.
    if (deferred_[owner] < FreeThievesForLocked(owner)) {
      token->deferred = true;
      ++deferred_[owner];
      copy = false;
    } else {
      sink = sinks_[owner];
    }
    CheckInvariantLocked();
  }
  if (copy) {
    if (sink) {
      sink(OwnerCopy(token));
    } else {
      OwnerCopy(token)();  // no helpers registered (tests): run inline
    }
  }
  return !copy;
}

void StealList::RebalanceLocked(std::vector<std::shared_ptr<Token>>* flush) {
  for (int owner = 0; owner < num_teams_; ++owner) {
    int excess = deferred_[owner] - FreeThievesForLocked(owner);
    for (auto it = listed_[owner].begin(); excess > 0 && it != listed_[owner].end(); ++it) {
      Token& t = **it;
      if (!t.deferred || t.claimed.load(std::memory_order_relaxed)) continue;
      t.deferred = false;
      --deferred_[owner];
      --excess;
      flush->push_back(*it);
    }
  }
}

void StealList::SendToOwners(std::vector<std::shared_ptr<Token>>* flush) {
  for (const std::shared_ptr<Token>& token : *flush) {
    Sink sink;
    {
      MutexLock l(&mu_);
      sink = sinks_[token->owner];
    }
    if (sink) {
      sink(OwnerCopy(token));
    } else {
      OwnerCopy(token)();
    }
  }
  flush->clear();
}

void StealList::BeginStealing(int thief) {
  MutexLock l(&mu_);
  state_[thief] = 1;
  free_[thief].store(1, std::memory_order_relaxed);
  CheckInvariantLocked();
}

void StealList::EndStealing(int thief) {
  std::vector<std::shared_ptr<Token>> flush;
  {
    MutexLock l(&mu_);
    state_[thief] = 0;
    free_[thief].store(0, std::memory_order_relaxed);
    RebalanceLocked(&flush);
    CheckInvariantLocked();
  }
  SendToOwners(&flush);
}

bool StealList::RunOne(int thief) {
  std::shared_ptr<Token> token;
  std::vector<std::shared_ptr<Token>> flush;
  {
    MutexLock l(&mu_);
    for (int i = 1; i < num_teams_ && token == nullptr; ++i) {
      const int owner = (thief + i) % num_teams_;
      auto& list = listed_[owner];
      while (!list.empty()) {
        std::shared_ptr<Token> t = std::move(list.front());
        list.pop_front();
        const bool was_deferred = t->deferred;
        if (!t->Claim()) continue;
        if (was_deferred) {
          t->deferred = false;
          --deferred_[owner];
        }
        token = std::move(t);
        break;
      }
    }
    if (token == nullptr) return false;
    state_[thief] = 2;
    free_[thief].store(0, std::memory_order_relaxed);
    // This thief is no longer free: blocks reserved beyond the remaining free
    // thieves go to their owners.
    RebalanceLocked(&flush);
    CheckInvariantLocked();
  }
  SendToOwners(&flush);
  const int owner = token->owner;
  counters_->running[owner].fetch_add(1, std::memory_order_relaxed);
  const int outer = tls_thief;
  tls_thief = thief;
  const int64_t start = MonotonicNowNs();
  {
    Closure fn = std::move(token->fn);
    fn();
  }
  stolen_ns_[thief].fetch_add(MonotonicNowNs() - start, std::memory_order_relaxed);
  tls_thief = outer;
  stolen_[thief].fetch_add(1, std::memory_order_relaxed);
  counters_->running[owner].fetch_sub(1, std::memory_order_relaxed);
  {
    MutexLock l(&mu_);
    state_[thief] = 1;
    free_[thief].store(1, std::memory_order_relaxed);
    CheckInvariantLocked();
  }
  return true;
}

bool StealList::HasWorkFor(int thief) const {
  for (int k = 0; k < num_teams_; ++k) {
    if (k != thief && counters_->unclaimed[k].load(std::memory_order_relaxed) > 0) return true;
  }
  return false;
}

bool StealList::FreeThiefFor(int owner) const {
  for (int k = 0; k < num_teams_; ++k) {
    if (k != owner && free_[k].load(std::memory_order_relaxed) != 0) return true;
  }
  return false;
}

int StealList::RunningFor(int owner) const {
  return counters_->running[owner].load(std::memory_order_relaxed);
}

uint64_t StealList::blocks_stolen(int thief) const {
  return stolen_[thief].load(std::memory_order_relaxed);
}

int64_t StealList::stolen_ns(int thief) const {
  return stolen_ns_[thief].load(std::memory_order_relaxed);
}

int StealList::CurrentThief() { return tls_thief; }

}  // namespace graphi
