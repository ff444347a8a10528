// Setting: where a graph's steps run, and SettingSource: who chose it.
//
// A setting is either "stock" (TensorFlow's own pools: a step's ready ops go
// to the runner TensorFlow passes the executor, kernels use the device's
// shared intra-op pool, as under TensorFlow's own executor) or E teams of T
// pinned threads (team_layout.h), with an optional ready-op policy. A field
// left 0 is "not given": configure(executors=2) names E and leaves T to the
// machine (SettingResolver fills it). The autotuner's candidates, adopted
// settings, configure() and the environment all speak this one type.
//
// Free of TensorFlow types. Thread-safety: a value type; thread-compatible.
#ifndef GRAPHI_TF_CC_TEAMS_SETTING_H_
#define GRAPHI_TF_CC_TEAMS_SETTING_H_

#include <optional>
#include <ostream>
#include <string>
#include <tuple>

#include "cc/teams/ready_queue.h"

namespace graphi {

struct Setting {
  int executors = 0;             // E; 0: not given
  int threads_per_executor = 0;  // T; 0: not given
  bool stock = false;            // TensorFlow's own pools (E and T are then 0)
  std::optional<ReadyPolicy> policy;  // unset: decided lower in the precedence

  // Whether it says where steps run (stock, or E or T given).
  bool names_layout() const { return stock || executors != 0 || threads_per_executor != 0; }
  // Whether both E and T are given, or it is stock.
  bool complete() const { return stock || (executors > 0 && threads_per_executor > 0); }
  // Same place to run (stock, or the same E and T), whatever the policy.
  bool SameLayout(const Setting& other) const {
    return stock == other.stock && executors == other.executors &&
           threads_per_executor == other.threads_per_executor;
  }
  // "stock", "2x1"; a field not given reads "*" ("2x*").
  std::string Label() const;

  friend bool operator==(const Setting& a, const Setting& b) {
    return a.SameLayout(b) && a.policy == b.policy;
  }
  friend bool operator!=(const Setting& a, const Setting& b) { return !(a == b); }
  // Stock first, then by (E, T), then unset policy before set ones: a
  // deterministic order for maps keyed by setting.
  friend bool operator<(const Setting& a, const Setting& b) {
    return std::make_tuple(!a.stock, a.executors, a.threads_per_executor, a.policy) <
           std::make_tuple(!b.stock, b.executors, b.threads_per_executor, b.policy);
  }
  friend std::ostream& operator<<(std::ostream& os, const Setting& s) { return os << s.Label(); }
};

// TensorFlow's own pools; the online autotuner's reference (autotuner.h).
inline constexpr Setting kStockSetting{0, 0, true, std::nullopt};

// E teams of T threads, no policy.
inline constexpr Setting TeamsSetting(int executors, int threads_per_executor) {
  return Setting{executors, threads_per_executor, false, std::nullopt};
}

// Parses a label: "stock" or "ExT" with whole numbers E, T >= 1. False with
// an error naming `what` and the allowed values otherwise.
bool ParseSetting(const std::string& text, const char* what, Setting* out, std::string* error);

// Where the setting in force came from, highest precedence first
// (setting_resolver.h): configure(), a GRAPHI_* variable, the layout the
// autotuner is visiting, a setting adopted for a graph (from the cache,
// tune() or the autotuner), else the default.
enum class SettingSource {
  kConfigure,
  kEnvironment,
  kAutotune,   // the autotuner's visit while it explores
  kCache,      // adopted: read from the cache
  kTuned,      // adopted: graphi_tf.tune()
  kAutotuned,  // adopted: the online autotuner's decision
  kDefault,
};

// "configure", "environment", "autotune", "cache", "tuned", "autotuned", "default".
const char* SettingSourceName(SettingSource source);
// Whether a source is one of the adopted ones (cache, tuned, autotuned).
bool IsAdoptedSource(SettingSource source);
// Parses an adopted source's name ("cache", "tuned", "autotuned"); false with
// an error naming the allowed values otherwise.
bool ParseAdoptedSource(const std::string& name, SettingSource* out, std::string* error);

}  // namespace graphi

#endif  // GRAPHI_TF_CC_TEAMS_SETTING_H_
