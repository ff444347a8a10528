#include "cc/executor/runtime.h"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "cc/executor/thread_affinity.h"

namespace graphi {

bool ReadPositiveEnv(const char* name, int* value, std::string* error) {
  *value = 0;
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return true;
  char* end = nullptr;
  errno = 0;
  long parsed = std::strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || parsed < 1 || parsed > 4096) {
    *error = std::string(name) + "='" + text +
             "' is not a valid setting; allowed: a whole number >= 1 (unset it to "
             "use the default)";
    return false;
  }
  *value = static_cast<int>(parsed);
  return true;
}

namespace {

// GRAPHI_AUTOTUNE: unset or "1" on, "0" off; GRAPHI_TUNE=0 also turns it off.
bool AutotuneFromEnv(std::string* error, bool* enabled) {
  const char* text = std::getenv("GRAPHI_AUTOTUNE");
  bool on = true;
  if (text != nullptr && *text != '\0') {
    const std::string value(text);
    if (value != "0" && value != "1") {
      if (error != nullptr) {
        *error = "GRAPHI_AUTOTUNE='" + value +
                 "' is not a valid setting; allowed: 0 (off) or 1 (on, the default)";
      }
      return false;
    }
    on = value == "1";
  }
  const char* tune = std::getenv("GRAPHI_TUNE");
  if (tune != nullptr && std::string(tune) == "0") on = false;
  if (enabled != nullptr) *enabled = on;
  return true;
}

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
}

bool Runtime::ResolveLocked(TeamLayout* layout, ReadyPolicy* policy, std::string* source,
                            std::string* error) {
  int env_e = 0, env_t = 0;
  if (!ReadPositiveEnv("GRAPHI_EXECUTORS", &env_e, error)) return false;
  if (!ReadPositiveEnv("GRAPHI_THREADS_PER_EXECUTOR", &env_t, error)) return false;
  const char* tune = std::getenv("GRAPHI_TUNE");
  const bool auto_tune = tune == nullptr || std::string(tune) != "0";
  if (!AutotuneFromEnv(error, nullptr)) return false;
  // Policy: configure() > GRAPHI_POLICY > adopted > default.
  *policy = auto_tune ? ReadyPolicy::kCriticalPathFirst : ReadyPolicy::kFifo;
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
  // Layout: configure() > environment > adopted > default.
  int e = 0, t = 0;
  if (configured_.executors || configured_.threads_per_executor) {
    e = configured_.executors;
    t = configured_.threads_per_executor;
    *source = "configure";
  } else if (env_e || env_t) {
    e = env_e;
    t = env_t;
    *source = "environment";
  } else if (exploring_.executors) {
    e = exploring_.executors;
    t = exploring_.threads_per_executor;
    *source = "autotune";
  } else if (adopted_.executors) {
    e = adopted_.executors;
    t = adopted_.threads_per_executor;
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

void Runtime::ReresolveLocked() {
  TeamLayout layout;
  ReadyPolicy policy;
  std::string source, error;
  if (ResolveLocked(&layout, &policy, &source, &error)) DropTeamsIfChangedLocked(layout, policy);
}

void Runtime::DropTeamsIfChangedLocked(const TeamLayout& layout, ReadyPolicy policy) {
  if (teams_ != nullptr && (teams_->layout().team_cpus != layout.team_cpus ||
                            teams_->scheduler().policy() != policy)) {
    teams_.reset();
  }
}

bool Runtime::AdoptSetting(int executors, int threads_per_executor, const std::string& policy,
                           const std::string& source, int node_count, std::string* error) {
  std::lock_guard<std::mutex> l(mu_);
  if (node_count < adopted_node_count_) return false;  // a larger graph's setting wins
  RuntimeSetting candidate;
  candidate.executors = executors;
  candidate.threads_per_executor = threads_per_executor;
  if (!policy.empty()) {
    if (!ParseReadyPolicy(policy, &candidate.policy)) {
      *error = "policy='" + policy + "' is not valid; allowed: fifo, critical_path_first";
      return false;
    }
    candidate.policy_set = true;
  }
  TeamLayout check;
  if (!BuildTeamLayout(topology_, executors, threads_per_executor, &check, error)) return false;
  const RuntimeSetting previous_configured = configured_;
  if (source == "tuned") configured_ = RuntimeSetting();
  adopted_ = candidate;
  adopted_source_ = source;
  adopted_node_count_ = node_count;
  TeamLayout layout;
  ReadyPolicy resolved_policy;
  std::string resolved_source;
  if (!ResolveLocked(&layout, &resolved_policy, &resolved_source, error)) {
    configured_ = previous_configured;
    return false;
  }
  DropTeamsIfChangedLocked(layout, resolved_policy);
  return resolved_source == source;
}

bool Runtime::Describe(TeamLayout* layout, ReadyPolicy* policy, std::string* source,
                       std::string* error) {
  std::lock_guard<std::mutex> l(mu_);
  return ResolveLocked(layout, policy, source, error);
}

bool Runtime::Configure(int executors, int threads_per_executor, const std::string& policy,
                        std::string* error) {
  std::lock_guard<std::mutex> l(mu_);
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
  return true;
}

void Runtime::ClearAdoptedSetting() {
  std::lock_guard<std::mutex> l(mu_);
  adopted_ = RuntimeSetting();
  adopted_source_.clear();
  adopted_node_count_ = -1;
  ReresolveLocked();
}

std::shared_ptr<TeamSet> Runtime::CurrentTeams(std::string* error) {
  std::lock_guard<std::mutex> l(mu_);
  TeamLayout layout;
  ReadyPolicy policy;
  std::string source;
  if (teams_ != nullptr) return teams_;
  if (!ResolveLocked(&layout, &policy, &source, error)) return nullptr;
  teams_ = TeamSet::Create(layout, policy, next_generation_++);
  return teams_;
}

void Runtime::SetExploring(int executors, int threads_per_executor) {
  std::lock_guard<std::mutex> l(mu_);
  exploring_ = RuntimeSetting();
  exploring_.executors = executors;
  exploring_.threads_per_executor = threads_per_executor;
  ReresolveLocked();
}

void Runtime::ClearExploring() {
  std::lock_guard<std::mutex> l(mu_);
  exploring_ = RuntimeSetting();
  ReresolveLocked();
}

bool Runtime::ExplicitLayout() {
  std::lock_guard<std::mutex> l(mu_);
  if (configured_.executors || configured_.threads_per_executor) return true;
  int env_e = 0, env_t = 0;
  std::string error;
  // An invalid value is explicit too: steps fail with its error anyway.
  if (!ReadPositiveEnv("GRAPHI_EXECUTORS", &env_e, &error)) return true;
  if (!ReadPositiveEnv("GRAPHI_THREADS_PER_EXECUTOR", &env_t, &error)) return true;
  return env_e != 0 || env_t != 0;
}

void Runtime::SetAutotune(int mode) {
  std::lock_guard<std::mutex> l(mu_);
  autotune_mode_ = mode < 0 ? -1 : (mode > 0 ? 1 : 0);
}

bool Runtime::AutotuneEnabled(std::string* error) {
  {
    std::lock_guard<std::mutex> l(mu_);
    if (autotune_mode_ >= 0) return autotune_mode_ == 1;
  }
  bool enabled = false;
  if (!AutotuneFromEnv(error, &enabled)) return false;
  return enabled;
}

}  // namespace graphi
