// Work conservation between executor teams: the parallel-for blocks of an op
// running on one team, offered to the other teams while they are idle.
//
// Teams are strict about ops (one op runs on one team), but an op's intra-op
// work is divided into blocks (Eigen parallelFor / TF Shard / Eigen
// contraction tasks / oneDNN jobs), scheduled one by one on the team's pool.
// When a team's pool is the work-conserving one (WorkConservingPool), every
// block it is given goes through Push(): it becomes a claim-once token that
// runs exactly once, either on the owner team's own helpers (through the
// owner's Sink, i.e. its TeamThreadPool) or on a *thief*: the leader of
// another team that is idle, waiting for the scheduler to give it an op
// (Scheduler::WaitForSlot). A thief runs one block at a time on its own
// pinned core and checks between blocks whether the scheduler has handed it
// work, so it stops after at most the block it is on.
//
// Where a block goes, so that no core gets two runnable GRAPHI threads and no
// block waits for a thread that will not come:
//   * A free thief (registered, not running a block) of another team can be
//     *reserved* for the block: the block is then not given to the owner's
//     helpers at all (waking a helper on the owner's core, where the owner's
//     leader computes its own share of the op, would put two threads on one
//     core). Invariant: deferred (reserved, unclaimed) blocks of owner k <=
//     free thieves of teams != k. Whenever a thief stops being free (it
//     claims a block, or it leaves because the scheduler gave it an op),
//     excess deferred blocks are handed to their owners' sinks. So every
//     unclaimed block has either an owner copy or a free thief that will
//     claim it: stealing can delay a block by at most one hand-off and never
//     strands one, even when a block waits for another block.
//   * Otherwise the owner copy is scheduled at once, and the token is still
//     listed: a thief that frees up (or a team that goes idle) may claim it
//     before the owner's helper gets to it.
//   * A block pushed from inside a stolen block (nested parallelism) is
//     reserved only for another free thief, never for the pushing thief,
//     which may be about to wait for it.
//
// Ids: CurrentThief() tells a pool's CurrentThreadId() which team's leader is
// running a stolen block on this thread (Eigen and oneDNN need a distinct id
// per thread in [0, NumThreads()) on pool threads).
//
// Free of TensorFlow types.
//
// Thread-safety: thread-safe. Sinks are called without the internal lock
// held. Memory ordering: a block's Push happens-before its run (hand-off
// through the mutex or the token's claim flag, acq_rel).
#ifndef GRAPHI_TF_CC_TEAMS_STEAL_LIST_H_
#define GRAPHI_TF_CC_TEAMS_STEAL_LIST_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "cc/util/mutex.h"
#include "cc/util/thread_annotations.h"

namespace graphi {

class StealList {
 public:
  using Closure = std::function<void()>;
  // Runs a block on the owner team's own helpers (e.g. TeamThreadPool::Schedule).
  using Sink = std::function<void(Closure)>;

  explicit StealList(int num_teams);
  ~StealList();

  StealList(const StealList&) = delete;
  StealList& operator=(const StealList&) = delete;

  int num_teams() const { return num_teams_; }

  // Where team `team`'s blocks go when no thief takes them. Set once per team
  // before the first Push for it.
  void SetSink(int team, Sink sink);

  // Offers one block of team `owner`'s work. Returns true when a thief should
  // be woken (the block was reserved for a free thief).
  bool Push(int owner, Closure block);

  // Team `thief`'s leader starts / stops taking other teams' blocks. Must
  // pair; EndStealing hands the blocks reserved for it to their owners.
  void BeginStealing(int thief);
  void EndStealing(int thief);

  // Claims the oldest unclaimed block of another team and runs it on the
  // calling thread (as team `thief`, which must be stealing). Returns false
  // if there was none.
  bool RunOne(int thief);

  // Lock-free hints.
  // Whether some other team's block is unclaimed (a thief should look).
  bool HasWorkFor(int thief) const;
  // Whether a thief of a team other than `owner` is free right now.
  bool FreeThiefFor(int owner) const;
  // Blocks of `owner` being run by thieves right now.
  int RunningFor(int owner) const;
  // Blocks run by team `thief` so far, and their total wall time.
  uint64_t blocks_stolen(int thief) const;
  int64_t stolen_ns(int thief) const;

  // The team whose leader is running a stolen block on the calling thread
  // (of any StealList), or -1.
  static int CurrentThief();

 private:
  struct Token;
  struct Counters;

  // Moves the oldest deferred tokens beyond what free thieves cover to
  // *flush.
  void RebalanceLocked(std::vector<std::shared_ptr<Token>>* flush)
      GRAPHI_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  int FreeThievesForLocked(int owner) const GRAPHI_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Debug builds (no NDEBUG): GRAPHI_DCHECKs the invariant above after every
  // change under mu_; release builds compile it to nothing.
  void CheckInvariantLocked() const GRAPHI_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void SendToOwners(std::vector<std::shared_ptr<Token>>* flush);
  static Closure OwnerCopy(const std::shared_ptr<Token>& token);

  const int num_teams_;
  std::shared_ptr<Counters> counters_;  // shared with tokens (owner copies)

  mutable Mutex mu_;
  std::vector<Sink> sinks_ GRAPHI_GUARDED_BY(mu_);
  std::vector<std::deque<std::shared_ptr<Token>>> listed_ GRAPHI_GUARDED_BY(mu_);  // per owner
  // Per owner: listed, unclaimed, no owner copy.
  std::vector<int> deferred_ GRAPHI_GUARDED_BY(mu_);
  // Per team: 0 not stealing, 1 free, 2 running.
  std::vector<int> state_ GRAPHI_GUARDED_BY(mu_);
  std::vector<std::atomic<int>> free_;     // mirror of state_ == 1, lock-free reads
  std::vector<std::atomic<uint64_t>> stolen_;
  std::vector<std::atomic<int64_t>> stolen_ns_;
};

}  // namespace graphi

#endif  // GRAPHI_TF_CC_TEAMS_STEAL_LIST_H_
