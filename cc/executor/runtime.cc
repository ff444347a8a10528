#include "cc/executor/runtime.h"

#include "cc/platform/malloc_arenas.h"
#include "cc/util/check.h"
#include "cc/platform/thread_affinity.h"
#include "cc/profiler/graph_registry.h"

namespace graphi {
namespace {

// The profiler's registry hands settings adopted for running graphs to the
// Runtime through this (the profiler does not include the executor).
class RuntimeAdoptionListener final : public AdoptionListener {
 public:
  void OnAdopted(const Adoption& adoption, int node_count, bool newly_adopted) override {
    std::string unused;  // a setting that does not fit is not followed
    // A tuned setting that applies again (its graph's load class came back)
    // is not tune() finishing now: it leaves a later configure() in force.
    const bool replaces_configure = newly_adopted && adoption.source == SettingSource::kTuned;
    Runtime::Get().AdoptSetting(adoption.setting, adoption.source, node_count, replaces_configure,
                                &unused);
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
  default_setting_ = DefaultSetting(topology_);
  // Before any GRAPHI thread exists (malloc_arenas.h).
  malloc_arena_max_ = RaiseMallocArenaMax(static_cast<int>(topology_.usable_cpus.size()));
  MutexLock l(&mu_);
  environment_ = ReadGraphiEnvironment();
  ApplyChangeLocked();
}

SettingInputs Runtime::InputsLocked() const {
  SettingInputs in;
  in.configured = configured_;
  in.environment = environment_;
  in.exploring = exploring_;
  in.adopted = adopted_;
  in.adopted_source = adopted_source_;
  in.default_setting = default_setting_;
  in.usable_cores = UsableCores(topology_);
  return in;
}

bool Runtime::ResolveLocked(ResolvedSetting* resolved, TeamLayout* layout, std::string* error) {
  if (!ResolveSetting(InputsLocked(), resolved, error)) return false;
  return BuildTeamLayout(topology_, resolved->teams.executors,
                         resolved->teams.threads_per_executor, layout, error);
}

void Runtime::ApplyChangeLocked() {
  ResolvedSetting resolved;
  TeamLayout layout;
  std::string error;
  if (!ResolveLocked(&resolved, &layout, &error)) {
    // Steps resolve again and report the error (CurrentTeams).
    stock_pools_.store(false, std::memory_order_release);
    return;
  }
  ApplyResolvedLocked(resolved, layout);
}

std::shared_ptr<StockPools> Runtime::StockPointPoolsLocked(int inter_op_threads,
                                                          int intra_op_threads) {
  for (const std::shared_ptr<StockPools>& pools : stock_point_pools_) {
    if (pools->inter_op_threads() == inter_op_threads &&
        pools->intra_op_threads() == intra_op_threads) {
      return pools;
    }
  }
  // The threads span the usable cpus whatever thread gets here (often a
  // pinned team thread ending a step; stock_pools.h).
  stock_point_pools_.push_back(
      StockPools::Create(inter_op_threads, intra_op_threads, topology_.usable_cpus));
  return stock_point_pools_.back();
}

void Runtime::ApplyResolvedLocked(const ResolvedSetting& resolved, const TeamLayout& layout) {
  const Setting& s = resolved.setting;
  std::shared_ptr<StockPools> point =
      s.stock_point() ? StockPointPoolsLocked(s.inter_op_threads(), s.intra_op_threads()) : nullptr;
  {
    MutexLock l(&point_mu_);
    stock_point_.swap(point);
  }
  stock_pools_.store(s.stock, std::memory_order_release);
  DropTeamsIfChangedLocked(layout, *resolved.teams.policy);
  NoteUnusedLocked();
  // `point` (the pools no longer in force, if any) is still in
  // stock_point_pools_ or held by steps: dropping it here joins nothing.
}

StockPools* Runtime::StockPointInForce() {
  MutexLock l(&point_mu_);
  return stock_point_.get();
}

void Runtime::NoteUnusedLocked() {
  bool pending = false;
  if (!ExploringLocked()) {
    const bool stock = stock_pools_.load(std::memory_order_relaxed);
    pending = !warm_teams_.empty() || (stock && teams_ != nullptr);
    StockPools* const in_force = StockPointInForce();
    for (const std::shared_ptr<StockPools>& pools : stock_point_pools_) {
      pending = pending || pools.get() != in_force;
    }
  }
  release_pending_.store(pending, std::memory_order_release);
}

void Runtime::TakeUnusedLocked(bool teams_asked_for, Unused* out) {
  if (ExploringLocked()) return;
  out->teams.swap(warm_teams_);
  // Steps on TensorFlow's executor ask for no teams; a later setting that
  // needs them builds them again.
  if (!teams_asked_for && stock_pools_.load(std::memory_order_relaxed) && teams_ != nullptr) {
    out->teams.push_back(std::move(teams_));
    teams_.reset();
  }
  StockPools* const in_force = StockPointInForce();
  std::vector<std::shared_ptr<StockPools>> kept;
  for (std::shared_ptr<StockPools>& pools : stock_point_pools_) {
    (pools.get() == in_force ? kept : out->stock_points).push_back(std::move(pools));
  }
  stock_point_pools_.swap(kept);
  // Not simply false: under stock the teams a step asked for stay until the
  // next step on stock, which asks for none, lets them go.
  NoteUnusedLocked();
}

void Runtime::DropTeamsIfChangedLocked(const TeamLayout& layout, ReadyPolicy policy) {
  if (teams_ != nullptr && (teams_->layout().team_cpus != layout.team_cpus ||
                            teams_->scheduler().policy() != policy)) {
    // The exploring_ check covers SetExploring (the set the graph started on);
    // a non-empty warm_teams_ covers the switch back in ClearExploring.
    if (ExploringLocked() || !warm_teams_.empty()) warm_teams_.push_back(teams_);
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

GraphiEnvironment Runtime::RefreshEnvironment() {
  MutexLock l(&mu_);
  environment_ = ReadGraphiEnvironment();
  ApplyChangeLocked();
  return environment_;
}

bool Runtime::Configure(const Setting& setting, std::string* error) {
  if (setting.stock || setting.executors < 0 || setting.threads_per_executor < 0) {
    *error = "executors and threads_per_executor must be >= 1 (or unset); got " +
             std::to_string(setting.executors) + " x " +
             std::to_string(setting.threads_per_executor);
    return false;
  }
  MutexLock l(&mu_);
  const Setting previous = configured_;
  const GraphiEnvironment previous_environment = environment_;
  configured_ = setting;
  environment_ = ReadGraphiEnvironment();
  ResolvedSetting resolved;
  TeamLayout layout;
  if (!ResolveLocked(&resolved, &layout, error)) {
    configured_ = previous;
    environment_ = previous_environment;
    return false;
  }
  ApplyResolvedLocked(resolved, layout);
  return true;
}

bool Runtime::AdoptSetting(const Setting& setting, SettingSource source, int node_count,
                           bool replaces_configure, std::string* error) {
  GRAPHI_DCHECK(setting.complete() && IsAdoptedSource(source));
  MutexLock l(&mu_);
  if (node_count < adopted_node_count_) return false;  // a larger graph's setting wins
  TeamLayout check;
  if (!setting.stock && !BuildTeamLayout(topology_, setting.executors,
                                         setting.threads_per_executor, &check, error)) {
    return false;
  }
  const Setting previous_configured = configured_;
  if (replaces_configure) configured_ = Setting();
  adopted_ = setting;
  adopted_source_ = source;
  adopted_node_count_ = node_count;
  ResolvedSetting resolved;
  TeamLayout layout;
  if (!ResolveLocked(&resolved, &layout, error)) {
    configured_ = previous_configured;
    ApplyChangeLocked();  // adopted_ stays: it applies once the environment is fixed
    return false;
  }
  ApplyResolvedLocked(resolved, layout);
  return resolved.source == source;
}

void Runtime::ClearAdoptedSetting() {
  MutexLock l(&mu_);
  adopted_ = Setting();
  adopted_source_ = SettingSource::kCache;
  adopted_node_count_ = -1;
  ApplyChangeLocked();
}

bool Runtime::Describe(ResolvedSetting* resolved, TeamLayout* teams, std::string* error) {
  MutexLock l(&mu_);
  return ResolveLocked(resolved, teams, error);
}

bool Runtime::UseStockExecutor(std::shared_ptr<StockPools>* point) {
  if (!stock_pools_.load(std::memory_order_acquire)) return false;
  {
    MutexLock l(&point_mu_);
    *point = stock_point_;
  }
  if (release_pending_.load(std::memory_order_acquire)) ReleaseUnusedOnStock();
  return true;
}

std::shared_ptr<TeamSet> Runtime::CurrentTeams(std::string* error) {
  // Declared before the lock so that what is let go is destroyed (its idle
  // threads joined) after it is released.
  Unused released;
  MutexLock l(&mu_);
  if (teams_ == nullptr) {
    ResolvedSetting resolved;
    TeamLayout layout;
    if (!ResolveLocked(&resolved, &layout, error)) return nullptr;
    const ReadyPolicy policy = *resolved.teams.policy;
    teams_ = TakeWarmTeamsLocked(layout, policy);
    if (teams_ == nullptr) teams_ = TeamSet::Create(layout, policy, next_generation_++);
    // Under stock these are for a step that looked before the setting moved
    // there (or one nested on a team thread, or scheduler_stats): the next
    // step on stock lets them go, rather than the next change of setting.
    NoteUnusedLocked();
  }
  // Past exploration (the autotuner adopts before it stops, so the next step
  // already resolves to the setting it settled on), what that setting does
  // not use is let go; threads end once no step holds them.
  if (release_pending_.load(std::memory_order_relaxed)) {
    TakeUnusedLocked(/*teams_asked_for=*/true, &released);
  }
  return teams_;
}

void Runtime::ReleaseUnusedOnStock() {
  // As CurrentTeams does, for steps on stock, which never get there.
  Unused released;  // destroyed after the lock
  MutexLock l(&mu_);
  TakeUnusedLocked(/*teams_asked_for=*/false, &released);
}

void Runtime::SetExploring(const Setting& setting) {
  GRAPHI_DCHECK(setting.complete());
  MutexLock l(&mu_);
  exploring_ = setting;
  exploring_.policy.reset();
  ApplyChangeLocked();
}

void Runtime::ClearExploring() {
  MutexLock l(&mu_);
  exploring_ = Setting();
  ApplyChangeLocked();
}

bool Runtime::ExplicitLayout() {
  MutexLock l(&mu_);
  return LayoutIsExplicit(InputsLocked());
}

void Runtime::SetAutotune(int mode) {
  MutexLock l(&mu_);
  autotune_mode_ = mode < 0 ? -1 : (mode > 0 ? 1 : 0);
}

bool Runtime::AutotuneEnabled(std::string* error) {
  MutexLock l(&mu_);
  if (autotune_mode_ >= 0) return autotune_mode_ == 1;
  bool enabled = false;
  if (!AutotuneFromEnvironment(environment_, &enabled, error)) return false;
  return enabled;
}

}  // namespace graphi
