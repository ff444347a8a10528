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
  *policy = ReadyPolicy::kFifo;
  if (configured_.policy_set) {
    *policy = configured_.policy;
  } else if (const char* p = std::getenv("GRAPHI_POLICY"); p != nullptr && *p != '\0') {
    if (!ParseReadyPolicy(p, policy)) {
      *error = std::string("GRAPHI_POLICY='") + p +
               "' is not a valid setting; allowed: fifo, critical_path_first";
      return false;
    }
  }
  int def_e = 1, def_t = 1;
  DefaultSetting(topology_, &def_e, &def_t);
  int e = configured_.executors ? configured_.executors : env_e;
  int t = configured_.threads_per_executor ? configured_.threads_per_executor : env_t;
  *source = configured_.executors || configured_.threads_per_executor
                ? "configure"
                : (env_e || env_t ? "environment" : "default");
  if (e == 0 && t == 0) {
    e = def_e;
    t = def_t;
  } else if (e == 0) {
    e = std::max(1, UsableCores(topology_) / t);
  } else if (t == 0) {
    t = std::max(1, UsableCores(topology_) / e);
  }
  return BuildTeamLayout(topology_, e, t, layout, error);
}

bool Runtime::ResolveSetting(TeamLayout* layout, ReadyPolicy* policy, std::string* error) {
  std::lock_guard<std::mutex> l(mu_);
  std::string source;
  return ResolveLocked(layout, policy, &source, error);
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
  // Rebuild lazily: drop the current set only if it differs.
  if (teams_ != nullptr && (teams_->layout().team_cpus != layout.team_cpus ||
                            teams_->scheduler().policy() != resolved_policy)) {
    teams_.reset();
  }
  return true;
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

}  // namespace graphi
