#include "cc/executor/setting_resolver.h"

#include <algorithm>

namespace graphi {
namespace {

// Fills a layout that gives only E or only T from the usable cores.
Setting Completed(Setting s, int usable_cores) {
  if (s.stock) return s;
  if (s.executors == 0) s.executors = std::max(1, usable_cores / s.threads_per_executor);
  if (s.threads_per_executor == 0) s.threads_per_executor = std::max(1, usable_cores / s.executors);
  return s;
}

}  // namespace

bool EnvironmentSetting(const GraphiEnvironment& env, Setting* out, std::string* error) {
  for (const EnvInt* read : {&env.executors, &env.threads_per_executor, &env.tune, &env.autotune}) {
    if (!read->ok()) {
      *error = read->error;
      return false;
    }
  }
  Setting s;
  if (env.executors.set && env.executors.value == kEnvStock) {
    if (env.threads_per_executor.set) {
      *error = "GRAPHI_THREADS_PER_EXECUTOR=" + std::to_string(env.threads_per_executor.value) +
               " cannot go with GRAPHI_EXECUTORS=stock (TensorFlow's own pools have no teams); "
               "unset one of them";
      return false;
    }
    s = kStockSetting;
    if (!env.stock_point.empty() &&
        !ParseSetting(env.stock_point, "GRAPHI_EXECUTORS", &s, error)) {
      return false;
    }
  } else {
    s.executors = static_cast<int>(env.executors.value_or(0));
    s.threads_per_executor = static_cast<int>(env.threads_per_executor.value_or(0));
  }
  if (!env.policy.empty()) {
    ReadyPolicy policy;
    if (!ParseReadyPolicy(env.policy, &policy)) {
      *error = "GRAPHI_POLICY='" + env.policy +
               "' is not a valid setting; allowed: fifo, critical_path_first";
      return false;
    }
    s.policy = policy;
  }
  *out = s;
  return true;
}

bool AutotuneFromEnvironment(const GraphiEnvironment& env, bool* on, std::string* error) {
  for (const EnvInt* read : {&env.autotune, &env.tune}) {
    if (!read->ok()) {
      if (error != nullptr) *error = read->error;
      return false;
    }
  }
  *on = env.autotune.value == 1 && env.tune.value == 1;
  return true;
}

bool ResolveSetting(const SettingInputs& in, ResolvedSetting* out, std::string* error) {
  Setting env;
  if (!EnvironmentSetting(in.environment, &env, error)) return false;

  ResolvedSetting r;
  Setting layout;
  if (in.configured.names_layout()) {
    layout = in.configured;
    r.source = SettingSource::kConfigure;
  } else if (env.names_layout()) {
    layout = env;
    r.source = SettingSource::kEnvironment;
  } else if (in.exploring.names_layout()) {
    layout = in.exploring;
    r.source = SettingSource::kAutotune;
  } else if (in.adopted.names_layout()) {
    layout = in.adopted;
    r.source = in.adopted_source;
  } else {
    layout = in.default_setting;
    r.source = SettingSource::kDefault;
  }
  layout = Completed(layout, in.usable_cores);

  ReadyPolicy policy = in.environment.tune.value == 1 ? ReadyPolicy::kCriticalPathFirst
                                                      : ReadyPolicy::kFifo;
  if (in.configured.policy) {
    policy = *in.configured.policy;
  } else if (env.policy) {
    policy = *env.policy;
  } else if (in.adopted.policy) {
    policy = *in.adopted.policy;
  }

  r.setting = layout;
  r.setting.policy = policy;
  r.teams = layout.stock ? in.default_setting : layout;
  r.teams.policy = policy;
  *out = r;
  return true;
}

bool LayoutIsExplicit(const SettingInputs& in) {
  if (in.configured.names_layout()) return true;
  const GraphiEnvironment& env = in.environment;
  if (!env.executors.ok() || !env.threads_per_executor.ok()) return true;
  return env.executors.set || env.threads_per_executor.set;
}

}  // namespace graphi
