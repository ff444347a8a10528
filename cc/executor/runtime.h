// The process-wide GRAPHI runtime: machine topology, the current team layout
// and its threads, and the ready-op policy.
//
// Settings come from, in order: the last Configure() call (Python
// graphi_tf.configure), the environment (GRAPHI_EXECUTORS,
// GRAPHI_THREADS_PER_EXECUTOR, GRAPHI_POLICY), the layout the autotuner is
// exploring (autotuner.h), a setting adopted for a graph this process runs
// (from the cache, tune() or the autotuner, for the load class the graph is
// in; when several graphs have one, the largest graph's wins), else the default: one team per L2 tile with as many
// threads as the tile has cores (DefaultSetting). The default policy is
// critical_path_first (which orders like fifo until costs are known);
// GRAPHI_TUNE=0 makes it fifo.
//
// GRAPHI_EXECUTORS=stock, the autotuner's visit and an adopted setting may
// also be "stock"
// (kStockSetting, tuning_decision.h): steps then run on TensorFlow's own
// pools, and the teams of the resolved layout (the default's) stay idle, built
// only if a step still needs them. configure() always names teams.
//
// Autotuning is on unless SetAutotune(0), GRAPHI_AUTOTUNE=0 or GRAPHI_TUNE=0
// turns it off (SetAutotune wins over the environment).
//
// Teams are created lazily, on the first step that needs them, and rebuilt
// when the setting changes; steps in flight finish on the teams they started
// on. While the autotuner explores, the team sets it leaves are kept warm and
// reused when a layout comes round again, and the first step after it stops
// runs on the kept set of the layout it settled on: "kept the default" means
// the very threads the graph started on, not new ones that start with cold
// thread-local state (oneDNN's primitive cache, malloc arenas), and
// exploration builds at most one set per candidate layout rather than one per
// visit. The other kept sets are released then.
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

#include "cc/teams/ready_queue.h"
#include "cc/teams/team_layout.h"
#include "cc/teams/team_set.h"
#include "cc/platform/topology.h"
#include "cc/util/mutex.h"
#include "cc/util/thread_annotations.h"

namespace graphi {

// The largest GRAPHI_EXECUTORS / GRAPHI_THREADS_PER_EXECUTOR the environment
// may ask for: more than any machine has cores, small enough that a typo
// (an extra digit) is an error rather than a huge layout request.
inline constexpr int kMaxLayoutSetting = 4096;

struct RuntimeSetting {
  int executors = 0;             // 0 = not set
  int threads_per_executor = 0;  // 0 = not set
  // The "stock" setting (tuning_decision.h, kStockSetting): steps run on
  // TensorFlow's own pools. Only the autotuner and adopted settings carry it.
  bool stock = false;
  ReadyPolicy policy = ReadyPolicy::kFifo;
  bool policy_set = false;
};

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

  // Sets the layout for later steps. 0 means "environment or default" for
  // that field. Returns false with a message naming the setting and the
  // allowed values if the layout does not fit the machine.
  bool Configure(int executors, int threads_per_executor, const std::string& policy,
                 std::string* error) GRAPHI_LOCKS_EXCLUDED(mu_);

  // The teams steps should start on now; builds them on first use. Returns
  // null and fills *error if the environment holds an invalid setting.
  // With `stock_pools`, when the "stock" setting is in force, sets it and
  // returns null with no error: the step runs on TensorFlow's own pools.
  // Without it the teams are returned anyway (a nested step on a team
  // thread keeps its caller's teams).
  std::shared_ptr<TeamSet> CurrentTeams(std::string* error, bool* stock_pools = nullptr)
      GRAPHI_LOCKS_EXCLUDED(mu_);

  // The setting in force for a graph (source "cache", "tuned" or
  // "autotuned") of `node_count` nodes, for the load class it is in
  // (load_class.h); 0 x 0 is the "stock" setting. Followed unless the user
  // set the layout through Configure() or the environment, or a larger
  // graph's setting is in force. `replaces_configure` (tune() finishing: it
  // configures while it sweeps) also clears a Configure(). Returns whether
  // the layout now follows it; *error if it does not fit.
  bool AdoptSetting(int executors, int threads_per_executor, const std::string& policy,
                    const std::string& source, int node_count, bool replaces_configure,
                    std::string* error) GRAPHI_LOCKS_EXCLUDED(mu_);

  // Forgets the adopted setting (back to environment/default).
  void ClearAdoptedSetting() GRAPHI_LOCKS_EXCLUDED(mu_);

  // The layout the autotuner is trying (0 x 0: "stock"); below Configure()
  // and the environment, above adopted settings.
  void SetExploring(int executors, int threads_per_executor) GRAPHI_LOCKS_EXCLUDED(mu_);
  void ClearExploring() GRAPHI_LOCKS_EXCLUDED(mu_);
  // Whether Configure() or the environment pins the layout.
  bool ExplicitLayout() GRAPHI_LOCKS_EXCLUDED(mu_);

  // -1: follow the environment (GRAPHI_AUTOTUNE, GRAPHI_TUNE); 0: off; 1: on.
  void SetAutotune(int mode) GRAPHI_LOCKS_EXCLUDED(mu_);
  // Whether online autotuning is on. False with *error set if
  // GRAPHI_AUTOTUNE holds an invalid value.
  bool AutotuneEnabled(std::string* error = nullptr) GRAPHI_LOCKS_EXCLUDED(mu_);

  // Description of the setting in force (for info()): fills the layout that
  // would be used and where it came from ("configure", "environment",
  // "default"), and whether steps run on TensorFlow's pools instead
  // (*stock; the layout is then that of the teams kept idle beside them).
  bool Describe(TeamLayout* layout, ReadyPolicy* policy, std::string* source,
                std::string* error, bool* stock = nullptr) GRAPHI_LOCKS_EXCLUDED(mu_);

 private:
  Runtime();
  // The setting in force: the layout, the policy and where it came from;
  // *stock when that is the "stock" setting (the layout is then the
  // default's, for teams nested steps may still need).
  bool ResolveLocked(TeamLayout* layout, ReadyPolicy* policy, std::string* source,
                     std::string* error, bool* stock = nullptr)
      GRAPHI_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether the "stock" setting is in force, as ResolveLocked would say:
  // below_env_ and the environment, without mu_.
  bool StockInForce() const;
  // Stores below_env_ from configured_, exploring_ and adopted_; called by
  // every method that changes them.
  void PublishBelowEnvLocked() GRAPHI_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether the autotuner is visiting a setting (a layout or "stock").
  bool ExploringLocked() const GRAPHI_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return exploring_.executors != 0 || exploring_.stock;
  }
  // The policy: configure() > GRAPHI_POLICY > adopted > default.
  bool ResolvePolicyLocked(ReadyPolicy* policy, std::string* error)
      GRAPHI_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Resolves the setting again after a change and drops the live teams if
  // it moved (a setting that fails to resolve leaves them as they are).
  void ReresolveLocked() GRAPHI_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops the live teams if `layout`/`policy` differ (rebuilt lazily); while
  // exploring, or until the first step after it, into warm_teams_.
  void DropTeamsIfChangedLocked(const TeamLayout& layout, ReadyPolicy policy)
      GRAPHI_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Releases the kept sets once exploration is over, for steps that run on
  // "stock" and so never reach CurrentTeams' release.
  void ReleaseWarmTeamsOnStock() GRAPHI_LOCKS_EXCLUDED(mu_);
  // Removes and returns the kept set for `layout`/`policy`, or null.
  std::shared_ptr<TeamSet> TakeWarmTeamsLocked(const TeamLayout& layout, ReadyPolicy policy)
      GRAPHI_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Topology topology_;           // immutable after construction
  std::string topology_error_;  // immutable after construction
  int malloc_arena_max_ = 0;    // immutable after construction

  Mutex mu_;
  RuntimeSetting configured_ GRAPHI_GUARDED_BY(mu_);
  RuntimeSetting adopted_ GRAPHI_GUARDED_BY(mu_);
  std::string adopted_source_ GRAPHI_GUARDED_BY(mu_);
  int adopted_node_count_ GRAPHI_GUARDED_BY(mu_) = -1;
  RuntimeSetting exploring_ GRAPHI_GUARDED_BY(mu_);
  int autotune_mode_ GRAPHI_GUARDED_BY(mu_) = -1;
  std::shared_ptr<TeamSet> teams_ GRAPHI_GUARDED_BY(mu_);
  // Team sets left while exploring (at most one per candidate layout), idle.
  std::vector<std::shared_ptr<TeamSet>> warm_teams_ GRAPHI_GUARDED_BY(mu_);
  uint64_t next_generation_ GRAPHI_GUARDED_BY(mu_) = 1;
  // The setting's precedence without the environment, for StockInForce():
  // configure() in force, else whether the autotuner's visit or the adopted
  // setting is "stock". Written under mu_ (release), read without it
  // (acquire): a step that starts while it changes may use either value,
  // as it could with the lock.
  static constexpr int kConfigured = 0;
  static constexpr int kBelowEnvStock = 1;
  static constexpr int kBelowEnvTeams = 2;
  std::atomic<int> below_env_{kBelowEnvTeams};
  // Whether warm_teams_ is non-empty (written under mu_): a step on "stock"
  // takes the lock only to release them once exploration is over.
  std::atomic<bool> warm_teams_pending_{false};
};

// What GRAPHI_EXECUTORS=stock reads as: the "stock" setting, chosen
// explicitly (steps on TensorFlow's own pools, inside the GRAPHI executor;
// for A/B runs and as a way out of teams without changing executor_type).
inline constexpr int kStockEnv = -1;

// Reads GRAPHI_EXECUTORS or GRAPHI_THREADS_PER_EXECUTOR: a whole number
// from 1 to kMaxLayoutSetting, or unset (*value = 0); GRAPHI_EXECUTORS also
// takes "stock" (*value = kStockEnv). False with an error naming the
// variable and the allowed values for anything else.
bool ReadLayoutEnv(const char* name, int* value, std::string* error);

}  // namespace graphi

#endif  // GRAPHI_TF_CC_EXECUTOR_RUNTIME_H_
