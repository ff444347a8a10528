// The process-wide GRAPHI runtime: machine topology, the setting in force and
// the teams it runs on.
//
// The Runtime holds what may ask for a setting (configure(), the environment
// snapshot, the autotuner's visit, the adopted setting) and ResolveSetting
// (setting_resolver.h, which states the precedence) decides. It resolves
// again on every change and publishes whether steps run on TensorFlow's own
// executor ("stock", or a stock point on pools GRAPHI sizes), which a step
// reads without the lock.
//
// The environment is read (env_settings.h) when the library loads, at
// Configure() and when an executor is created (RefreshEnvironment), never on
// a step's path: a GRAPHI_* variable set later applies to graphs created
// later.
//
// Autotuning is on unless SetAutotune(0), GRAPHI_AUTOTUNE=0 or GRAPHI_TUNE=0
// turns it off (SetAutotune wins over the environment).
//
// Teams are created lazily, on the first step that needs them, and rebuilt
// when the setting changes; steps in flight finish on the teams they started
// on. A stock point's pools (stock_pools.h) are made when the setting first
// resolves to it, one set per (I, A); steps hold them (shared) until they
// end.
//
// While the autotuner explores, the team sets and stock points' pools it
// leaves are kept warm and reused when a setting comes round again, and the
// first step after it stops runs on the kept threads of the setting it
// settled on. Past exploration, the first step lets go of what the setting
// in force does not use: the other kept team sets, the other stock points'
// pools, and under "stock" (plain or a point) the teams too, which no step
// on TensorFlow's executor asks for (built again if a later setting needs
// them). Teams built while stock is in force, for a step that looked just
// before the setting moved there or one nested on a team thread, go with
// the next step on stock. A process that settled on stock then holds the
// threads a process started on that setting holds (docs/design.md, "Stock
// points").
//
// The Runtime is the GraphRegistry's AdoptionListener (set when the library
// loads, runtime.cc): settings adopted for running graphs reach AdoptSetting
// and ClearAdoptedSetting through it.
//
// Free of TensorFlow types. Thread-safety: thread-safe.
#ifndef GRAPHI_TF_CC_EXECUTOR_RUNTIME_H_
#define GRAPHI_TF_CC_EXECUTOR_RUNTIME_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cc/executor/setting_resolver.h"
#include "cc/platform/env_settings.h"
#include "cc/platform/topology.h"
#include "cc/teams/setting.h"
#include "cc/teams/stock_pools.h"
#include "cc/teams/team_layout.h"
#include "cc/teams/team_set.h"
#include "cc/util/mutex.h"
#include "cc/util/thread_annotations.h"

namespace graphi {

class Runtime {
 public:
  static Runtime& Get();

  // The machine as this process sees it (discovered once).
  const Topology& topology() const { return topology_; }
  // Why discovering the topology failed (the topology is then the affinity
  // mask as single-core tiles); empty when it succeeded.
  const std::string& topology_error() const { return topology_error_; }
  // The malloc arena limit GRAPHI set when it loaded (malloc_arenas.h), 0 if
  // it left glibc's alone.
  int malloc_arena_max() const { return malloc_arena_max_; }

  // Reads the environment again (an executor is being created) and returns
  // the snapshot, for the executor's own knobs.
  GraphiEnvironment RefreshEnvironment() GRAPHI_LOCKS_EXCLUDED(mu_);

  // Sets the layout and policy for later steps (never stock); a field not
  // given (0, no policy) falls to the environment or below. Reads the
  // environment again. False with a message naming the setting and the
  // allowed values if it does not fit the machine; nothing changes then.
  bool Configure(const Setting& setting, std::string* error) GRAPHI_LOCKS_EXCLUDED(mu_);

  // Whether steps run on TensorFlow's own executor now ("stock" or a stock
  // point in force); *point: the stock point's pools, for the step to hold
  // until it ends, null for TensorFlow's own pools. Lock-free for other
  // settings; on stock it takes a lock of its own briefly, and past
  // exploration it lets go of what stock does not use (see above), since
  // steps on stock never reach CurrentTeams.
  bool UseStockExecutor(std::shared_ptr<StockPools>* point)
      GRAPHI_LOCKS_EXCLUDED(mu_, point_mu_);

  // The teams of the setting in force (for stock, the default's, for a step
  // that still asks, e.g. one nested on a team thread); built on first use.
  // Null with *error when the environment holds an invalid setting. Past
  // exploration it also lets go of what the setting does not use (see
  // above).
  std::shared_ptr<TeamSet> CurrentTeams(std::string* error) GRAPHI_LOCKS_EXCLUDED(mu_);

  // The setting adopted for a graph of `node_count` nodes (a complete
  // setting, possibly stock; from an adopted `source`). Followed unless
  // configure() or the environment pins the layout, or a larger graph's
  // setting is in force. `replaces_configure` (tune() finishing: it
  // configures while it sweeps) also clears a Configure(). Returns whether
  // the layout now follows it; *error if it does not fit.
  bool AdoptSetting(const Setting& setting, SettingSource source, int node_count,
                    bool replaces_configure, std::string* error) GRAPHI_LOCKS_EXCLUDED(mu_);

  // Forgets the adopted setting.
  void ClearAdoptedSetting() GRAPHI_LOCKS_EXCLUDED(mu_);

  // The setting the autotuner is visiting (a layout or stock); below
  // configure() and the environment, above adopted settings.
  void SetExploring(const Setting& setting) GRAPHI_LOCKS_EXCLUDED(mu_);
  void ClearExploring() GRAPHI_LOCKS_EXCLUDED(mu_);
  // Whether configure() or the environment pins the layout.
  bool ExplicitLayout() GRAPHI_LOCKS_EXCLUDED(mu_);

  // -1: follow the environment (GRAPHI_AUTOTUNE, GRAPHI_TUNE); 0: off; 1: on.
  void SetAutotune(int mode) GRAPHI_LOCKS_EXCLUDED(mu_);
  // Whether online autotuning is on. False with *error set if
  // GRAPHI_AUTOTUNE or GRAPHI_TUNE holds an invalid value.
  bool AutotuneEnabled(std::string* error = nullptr) GRAPHI_LOCKS_EXCLUDED(mu_);

  // The setting in force and where it came from, and the layout of its
  // teams (for stock, of the default's, built only if a step asks).
  bool Describe(ResolvedSetting* resolved, TeamLayout* teams, std::string* error)
      GRAPHI_LOCKS_EXCLUDED(mu_);

 private:
  Runtime();
  SettingInputs InputsLocked() const GRAPHI_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Resolves the setting and builds its teams' layout.
  bool ResolveLocked(ResolvedSetting* resolved, TeamLayout* layout, std::string* error)
      GRAPHI_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The pools of stock point I x A, made on first use.
  std::shared_ptr<StockPools> StockPointPoolsLocked(int inter_op_threads, int intra_op_threads)
      GRAPHI_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Resolves again after a change: publishes stock_pools_ and drops the live
  // teams if the layout or policy moved (a setting that fails to resolve
  // leaves the teams as they are, and steps report its error).
  void ApplyChangeLocked() GRAPHI_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The same for a setting just resolved (no second resolution).
  void ApplyResolvedLocked(const ResolvedSetting& resolved, const TeamLayout& layout)
      GRAPHI_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool ExploringLocked() const GRAPHI_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return exploring_.names_layout();
  }
  // Drops the live teams if `layout`/`policy` differ (rebuilt lazily); while
  // exploring, or until the first step after it, into warm_teams_.
  void DropTeamsIfChangedLocked(const TeamLayout& layout, ReadyPolicy policy)
      GRAPHI_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // What the setting in force does not use, let go by the first step past
  // exploration; destroyed (threads joined) after the lock is released.
  struct Unused {
    std::vector<std::shared_ptr<TeamSet>> teams;
    std::vector<std::shared_ptr<StockPools>> stock_points;
  };
  // The stock point in force (its pools), or null; for comparisons.
  StockPools* StockPointInForce() GRAPHI_LOCKS_EXCLUDED(point_mu_);
  // Whether there is any (past exploration); publishes release_pending_.
  void NoteUnusedLocked() GRAPHI_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Moves it into *out (nothing while exploring); the teams in force stay
  // if `teams_asked_for` (CurrentTeams), even under stock, and then stay
  // pending for the next step on stock. Publishes release_pending_ again.
  void TakeUnusedLocked(bool teams_asked_for, Unused* out) GRAPHI_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The same for a step on stock (UseStockExecutor).
  void ReleaseUnusedOnStock() GRAPHI_LOCKS_EXCLUDED(mu_);
  // Removes and returns the kept set for `layout`/`policy`, or null.
  std::shared_ptr<TeamSet> TakeWarmTeamsLocked(const TeamLayout& layout, ReadyPolicy policy)
      GRAPHI_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Topology topology_;           // immutable after construction
  std::string topology_error_;  // immutable after construction
  int malloc_arena_max_ = 0;    // immutable after construction
  Setting default_setting_;     // immutable after construction

  Mutex mu_;
  GraphiEnvironment environment_ GRAPHI_GUARDED_BY(mu_);
  Setting configured_ GRAPHI_GUARDED_BY(mu_);
  Setting exploring_ GRAPHI_GUARDED_BY(mu_);
  Setting adopted_ GRAPHI_GUARDED_BY(mu_);
  SettingSource adopted_source_ GRAPHI_GUARDED_BY(mu_) = SettingSource::kCache;
  int adopted_node_count_ GRAPHI_GUARDED_BY(mu_) = -1;
  int autotune_mode_ GRAPHI_GUARDED_BY(mu_) = -1;
  std::shared_ptr<TeamSet> teams_ GRAPHI_GUARDED_BY(mu_);
  // Team sets left while exploring (at most one per candidate layout), idle.
  std::vector<std::shared_ptr<TeamSet>> warm_teams_ GRAPHI_GUARDED_BY(mu_);
  uint64_t next_generation_ GRAPHI_GUARDED_BY(mu_) = 1;
  // The stock points' pools made and not yet let go (see above).
  std::vector<std::shared_ptr<StockPools>> stock_point_pools_ GRAPHI_GUARDED_BY(mu_);
  // Whether the resolved setting is stock. Written under mu_ (release) by
  // ApplyChangeLocked, read without it (acquire): a step that starts while
  // it changes may use either value, as it could with the lock.
  std::atomic<bool> stock_pools_{false};
  // Guards stock_point_ alone, so that a step on stock need not wait for mu_
  // (held while teams are built). Acquired after mu_, never before it.
  Mutex point_mu_ GRAPHI_ACQUIRED_AFTER(mu_);
  // The stock point in force (one of stock_point_pools_), else null; written
  // under both locks with stock_pools_, before it.
  std::shared_ptr<StockPools> stock_point_ GRAPHI_GUARDED_BY(point_mu_);
  // Whether TakeUnusedLocked would take anything (written under mu_): a step
  // on stock takes the lock only to release it once exploration is over.
  std::atomic<bool> release_pending_{false};
};

}  // namespace graphi

#endif  // GRAPHI_TF_CC_EXECUTOR_RUNTIME_H_
