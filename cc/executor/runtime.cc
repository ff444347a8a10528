#include "cc/executor/runtime.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "cc/platform/env_settings.h"
#include "cc/platform/malloc_arenas.h"
#include "cc/platform/thread_affinity.h"
#include "cc/profiler/graph_registry.h"

namespace graphi {

bool ReadLayoutEnv(const char* name, int* value, std::string* error) {
  const bool executors = std::strcmp(name, "GRAPHI_EXECUTORS") == 0;
  const EnvInt read = executors ? ReadEnvIntOrWord(name, 1, kMaxLayoutSetting, "stock", kStockEnv)
                                : ReadEnvInt(name, 1, kMaxLayoutSetting);
  if (!read.ok()) {
    *error = read.error;
    return false;
  }
  *value = static_cast<int>(read.value_or(0));
  return true;
}

namespace {

// GRAPHI_TUNE: unset or "1" on, "0" off: everything automatic (cached and
// tuned settings, critical-path ranks, autotuning). Any other value is an
// error naming it, as for every GRAPHI_* setting.
bool AutomaticFromEnv(std::string* error, bool* on) {
  const EnvInt tune = ReadEnvSwitch("GRAPHI_TUNE", /*default_on=*/true);
  if (!tune.ok()) {
    if (error != nullptr) *error = tune.error;
    return false;
  }
  *on = tune.value == 1;
  return true;
}

// GRAPHI_AUTOTUNE: unset or "1" on, "0" off; GRAPHI_TUNE=0 also turns it off.
bool AutotuneFromEnv(std::string* error, bool* enabled) {
  const EnvInt autotune = ReadEnvSwitch("GRAPHI_AUTOTUNE", /*default_on=*/true);
  if (!autotune.ok()) {
    if (error != nullptr) *error = autotune.error;
    return false;
  }
  bool automatic = true;
  if (!AutomaticFromEnv(error, &automatic)) return false;
  if (enabled != nullptr) *enabled = autotune.value == 1 && automatic;
  return true;
}

// The profiler's registry hands settings adopted for running graphs to the
// Runtime through this (the profiler does not include the executor).
class RuntimeAdoptionListener final : public AdoptionListener {
 public:
  void OnAdopted(const Adoption& adoption, int node_count, bool newly_adopted) override {
    std::string unused;  // a setting that does not fit is not followed
    // A tuned setting that applies again (its graph's load class came back)
    // is not tune() finishing now: it leaves a later configure() in force.
    const bool replaces_configure = newly_adopted && adoption.source == "tuned";
    Runtime::Get().AdoptSetting(adoption.setting.executors, adoption.setting.threads_per_executor,
                                adoption.setting.policy, adoption.source, node_count,
                                replaces_configure, &unused);
  }
  void OnAdoptionsCleared() override { Runtime::Get().ClearAdoptedSetting(); }
};

// Set when the library loads, before any graph can register or adopt.
[[maybe_unused]] const bool kRuntimeListens = [] {
  static RuntimeAdoptionListener* listener = new RuntimeAdoptionListener();
  GraphRegistry::Get().SetAdoptionListener(listener);
  return true;
}();

}  // namespace

Runtime& Runtime::Get() {
  static Runtime* runtime = new Runtime();  // never destroyed: threads outlive exit
  return *runtime;
}

Runtime::Runtime() {
  TopologySources sources;
  if (!DiscoverTopology(sources, &topology_, &topology_error_)) {
    // Fall back to the affinity mask as single-core tiles; pinning still
    // works, only tile sharing is unknown.
    topology_ = Topology();
    for (int cpu : CurrentThreadAffinity()) {
      topology_.usable_cpus.push_back(cpu);
      topology_.tiles.push_back({cpu});
    }
    topology_.quota_cores = static_cast<int>(topology_.usable_cpus.size());
  }
  // Before any GRAPHI thread exists (malloc_arenas.h).
  malloc_arena_max_ = RaiseMallocArenaMax(static_cast<int>(topology_.usable_cpus.size()));
}

bool Runtime::ResolveLocked(TeamLayout* layout, ReadyPolicy* policy, std::string* source,
                            std::string* error, bool* stock) {
  if (stock != nullptr) *stock = false;
  int env_e = 0, env_t = 0;
  if (!ReadLayoutEnv("GRAPHI_EXECUTORS", &env_e, error)) return false;
  if (!ReadLayoutEnv("GRAPHI_THREADS_PER_EXECUTOR", &env_t, error)) return false;
  if (!AutotuneFromEnv(error, nullptr)) return false;
  if (!ResolvePolicyLocked(policy, error)) return false;
  if (env_e == kStockEnv && env_t != 0) {
    *error = "GRAPHI_THREADS_PER_EXECUTOR=" + std::to_string(env_t) +
             " cannot go with GRAPHI_EXECUTORS=stock (TensorFlow's own pools have no teams); "
             "unset one of them";
    return false;
  }
  // Layout: configure() > environment > autotune > adopted > default.
  int e = 0, t = 0;
  if (configured_.executors || configured_.threads_per_executor) {
    e = configured_.executors;
    t = configured_.threads_per_executor;
    *source = "configure";
  } else if (env_e == kStockEnv) {
    if (stock != nullptr) *stock = true;
    *source = "environment";
  } else if (env_e || env_t) {
    e = env_e;
    t = env_t;
    *source = "environment";
  } else if (ExploringLocked()) {
    e = exploring_.executors;
    t = exploring_.threads_per_executor;
    if (stock != nullptr) *stock = exploring_.stock;
    *source = "autotune";
  } else if (adopted_.executors || adopted_.stock) {
    e = adopted_.executors;
    t = adopted_.threads_per_executor;
    if (stock != nullptr) *stock = adopted_.stock;
    *source = adopted_source_;
  } else {
    *source = "default";
  }
  if (e == 0 && t == 0) {
    DefaultSetting(topology_, &e, &t);
  } else if (e == 0) {
    e = std::max(1, UsableCores(topology_) / t);
  } else if (t == 0) {
    t = std::max(1, UsableCores(topology_) / e);
  }
  return BuildTeamLayout(topology_, e, t, layout, error);
}

void Runtime::PublishBelowEnvLocked() {
  int state = kBelowEnvTeams;
  if (configured_.executors || configured_.threads_per_executor) {
    state = kConfigured;
  } else if (ExploringLocked() ? exploring_.stock : adopted_.stock) {
    state = kBelowEnvStock;
  }
  below_env_.store(state, std::memory_order_release);
}

bool Runtime::StockInForce() const {
  // ResolveLocked's precedence, without its lock or a layout: this runs for
  // every step, nested ones included, and concurrent requests would queue
  // on mu_. configure() always names teams.
  const int below = below_env_.load(std::memory_order_acquire);
  if (below == kConfigured) return false;
  int env_e = 0, env_t = 0;
  std::string error;  // an invalid value: ResolveLocked reports it
  if (!ReadLayoutEnv("GRAPHI_EXECUTORS", &env_e, &error) ||
      !ReadLayoutEnv("GRAPHI_THREADS_PER_EXECUTOR", &env_t, &error)) {
    return false;
  }
  if (env_e == kStockEnv) return env_t == 0;
  if (env_e || env_t) return false;
  return below == kBelowEnvStock;
}

bool Runtime::ResolvePolicyLocked(ReadyPolicy* policy, std::string* error) {
  bool automatic = true;
  if (!AutomaticFromEnv(error, &automatic)) return false;
  *policy = automatic ? ReadyPolicy::kCriticalPathFirst : ReadyPolicy::kFifo;
  const char* env_policy = std::getenv("GRAPHI_POLICY");
  if (configured_.policy_set) {
    *policy = configured_.policy;
  } else if (env_policy != nullptr && *env_policy != '\0') {
    if (!ParseReadyPolicy(env_policy, policy)) {
      *error = std::string("GRAPHI_POLICY='") + env_policy +
               "' is not a valid setting; allowed: fifo, critical_path_first";
      return false;
    }
  } else if (adopted_.policy_set) {
    *policy = adopted_.policy;
  }
  return true;
}

void Runtime::ReresolveLocked() {
  TeamLayout layout;
  ReadyPolicy policy;
  std::string source, error;
  if (ResolveLocked(&layout, &policy, &source, &error)) DropTeamsIfChangedLocked(layout, policy);
}

void Runtime::DropTeamsIfChangedLocked(const TeamLayout& layout, ReadyPolicy policy) {
  if (teams_ != nullptr && (teams_->layout().team_cpus != layout.team_cpus ||
                            teams_->scheduler().policy() != policy)) {
    // The exploring_ check covers SetExploring (the set the graph started on);
    // a non-empty warm_teams_ covers the switch back in ClearExploring.
    if (ExploringLocked() || !warm_teams_.empty()) {
      warm_teams_.push_back(teams_);
      warm_teams_pending_.store(true, std::memory_order_release);
    }
    teams_.reset();
  }
}

std::shared_ptr<TeamSet> Runtime::TakeWarmTeamsLocked(const TeamLayout& layout,
                                                      ReadyPolicy policy) {
  for (auto it = warm_teams_.begin(); it != warm_teams_.end(); ++it) {
    if ((*it)->layout().team_cpus == layout.team_cpus && (*it)->scheduler().policy() == policy) {
      std::shared_ptr<TeamSet> found = *it;
      warm_teams_.erase(it);
      return found;
    }
  }
  return nullptr;
}

bool Runtime::AdoptSetting(int executors, int threads_per_executor, const std::string& policy,
                           const std::string& source, int node_count, bool replaces_configure,
                           std::string* error) {
  MutexLock l(&mu_);
  if (node_count < adopted_node_count_) return false;  // a larger graph's setting wins
  RuntimeSetting candidate;
  candidate.executors = executors;
  candidate.threads_per_executor = threads_per_executor;
  candidate.stock = executors == 0 && threads_per_executor == 0;
  if (!policy.empty()) {
    if (!ParseReadyPolicy(policy, &candidate.policy)) {
      *error = "policy='" + policy + "' is not valid; allowed: fifo, critical_path_first";
      return false;
    }
    candidate.policy_set = true;
  }
  TeamLayout check;
  if (!candidate.stock &&
      !BuildTeamLayout(topology_, executors, threads_per_executor, &check, error)) {
    return false;
  }
  const RuntimeSetting previous_configured = configured_;
  if (replaces_configure) configured_ = RuntimeSetting();
  adopted_ = candidate;
  adopted_source_ = source;
  adopted_node_count_ = node_count;
  TeamLayout layout;
  ReadyPolicy resolved_policy;
  std::string resolved_source;
  if (!ResolveLocked(&layout, &resolved_policy, &resolved_source, error)) {
    configured_ = previous_configured;
    PublishBelowEnvLocked();  // adopted_ stays: it applies once the environment is fixed
    return false;
  }
  DropTeamsIfChangedLocked(layout, resolved_policy);
  PublishBelowEnvLocked();
  return resolved_source == source;
}

bool Runtime::Describe(TeamLayout* layout, ReadyPolicy* policy, std::string* source,
                       std::string* error, bool* stock) {
  MutexLock l(&mu_);
  return ResolveLocked(layout, policy, source, error, stock);
}

bool Runtime::Configure(int executors, int threads_per_executor, const std::string& policy,
                        std::string* error) {
  MutexLock l(&mu_);
  if (executors < 0 || threads_per_executor < 0) {
    *error = "executors and threads_per_executor must be >= 1 (or unset); got " +
             std::to_string(executors) + " x " + std::to_string(threads_per_executor);
    return false;
  }
  RuntimeSetting previous = configured_;
  configured_.executors = executors;
  configured_.threads_per_executor = threads_per_executor;
  if (!policy.empty()) {
    ReadyPolicy parsed;
    if (!ParseReadyPolicy(policy, &parsed)) {
      *error = "policy='" + policy + "' is not valid; allowed: fifo, critical_path_first";
      configured_ = previous;
      return false;
    }
    configured_.policy = parsed;
    configured_.policy_set = true;
  } else {
    configured_.policy_set = false;
  }
  TeamLayout layout;
  ReadyPolicy resolved_policy;
  std::string source;
  if (!ResolveLocked(&layout, &resolved_policy, &source, error)) {
    configured_ = previous;
    return false;
  }
  DropTeamsIfChangedLocked(layout, resolved_policy);  // rebuilt lazily
  PublishBelowEnvLocked();
  return true;
}

void Runtime::ClearAdoptedSetting() {
  MutexLock l(&mu_);
  adopted_ = RuntimeSetting();
  adopted_source_.clear();
  adopted_node_count_ = -1;
  ReresolveLocked();
  PublishBelowEnvLocked();
}

std::shared_ptr<TeamSet> Runtime::CurrentTeams(std::string* error, bool* stock_pools) {
  if (stock_pools != nullptr) {
    *stock_pools = StockInForce();
    if (*stock_pools) {
      if (warm_teams_pending_.load(std::memory_order_acquire)) ReleaseWarmTeamsOnStock();
      return nullptr;
    }
  }
  // Declared before the lock so that released sets are destroyed (their idle
  // threads joined) after it is let go.
  std::vector<std::shared_ptr<TeamSet>> released;
  MutexLock l(&mu_);
  TeamLayout layout;
  ReadyPolicy policy;
  std::string source;
  if (teams_ == nullptr) {
    if (!ResolveLocked(&layout, &policy, &source, error)) return nullptr;
    teams_ = TakeWarmTeamsLocked(layout, policy);
    if (teams_ == nullptr) teams_ = TeamSet::Create(layout, policy, next_generation_++);
  }
  // Past exploration (the autotuner adopts right after it stops, before the
  // next step gets here), the sets of the layouts not chosen are let go; their
  // threads end once no step holds them.
  if (!ExploringLocked() && !warm_teams_.empty()) {
    released.swap(warm_teams_);
    warm_teams_pending_.store(false, std::memory_order_release);
  }
  return teams_;
}

void Runtime::ReleaseWarmTeamsOnStock() {
  // As CurrentTeams does past exploration, for a graph that settled on
  // "stock" and so never asks for teams again: the default layout's set
  // stays (for steps that still need teams), the others are let go.
  std::vector<std::shared_ptr<TeamSet>> released;  // destroyed after the lock
  MutexLock l(&mu_);
  if (ExploringLocked()) return;
  if (teams_ == nullptr && !warm_teams_.empty()) {
    TeamLayout layout;
    ReadyPolicy policy;
    std::string source, error;
    if (ResolveLocked(&layout, &policy, &source, &error)) {
      teams_ = TakeWarmTeamsLocked(layout, policy);
    }
  }
  released.swap(warm_teams_);
  warm_teams_pending_.store(false, std::memory_order_release);
}

void Runtime::SetExploring(int executors, int threads_per_executor) {
  MutexLock l(&mu_);
  exploring_ = RuntimeSetting();
  exploring_.executors = executors;
  exploring_.threads_per_executor = threads_per_executor;
  exploring_.stock = executors == 0 && threads_per_executor == 0;
  ReresolveLocked();
  PublishBelowEnvLocked();
}

void Runtime::ClearExploring() {
  MutexLock l(&mu_);
  exploring_ = RuntimeSetting();
  ReresolveLocked();
  PublishBelowEnvLocked();
}

bool Runtime::ExplicitLayout() {
  MutexLock l(&mu_);
  if (configured_.executors || configured_.threads_per_executor) return true;
  int env_e = 0, env_t = 0;
  std::string error;
  // An invalid value is explicit too: steps fail with its error anyway.
  if (!ReadLayoutEnv("GRAPHI_EXECUTORS", &env_e, &error)) return true;
  if (!ReadLayoutEnv("GRAPHI_THREADS_PER_EXECUTOR", &env_t, &error)) return true;
  return env_e != 0 || env_t != 0;
}

void Runtime::SetAutotune(int mode) {
  MutexLock l(&mu_);
  autotune_mode_ = mode < 0 ? -1 : (mode > 0 ? 1 : 0);
}

bool Runtime::AutotuneEnabled(std::string* error) {
  {
    MutexLock l(&mu_);
    if (autotune_mode_ >= 0) return autotune_mode_ == 1;
  }
  bool enabled = false;
  if (!AutotuneFromEnv(error, &enabled)) return false;
  return enabled;
}

}  // namespace graphi
