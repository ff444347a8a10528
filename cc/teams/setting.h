// Setting: where a graph's steps run, and SettingSource: who chose it.
//
// A setting is one of:
//   * "stock": TensorFlow's own executor on TensorFlow's own pools (a step's
//     ready ops go to the runner TensorFlow passes the executor, kernels use
//     the device's shared intra-op pool);
//   * a stock point "stock:IxA": TensorFlow's own executor on pools GRAPHI
//     owns and sizes, I inter-op threads and A intra-op threads, unpinned
//     (stock_pools.h): what inter_op_parallelism_threads=I and
//     intra_op_parallelism_threads=A give, without a new process;
//   * E teams of T pinned threads (team_layout.h);
// with an optional ready-op policy. A field
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
  // Teams: E and T (0: not given). A stock point: its inter-op (I) and
  // intra-op (A) pool sizes, both >= 1. Plain stock: both 0.
  int executors = 0;
  int threads_per_executor = 0;
  bool stock = false;  // TensorFlow's own executor (plain, or a stock point)
  std::optional<ReadyPolicy> policy;  // unset: decided lower in the precedence

  // A stock point: TensorFlow's executor on pools GRAPHI sizes.
  bool stock_point() const { return stock && executors > 0; }
  int inter_op_threads() const { return stock_point() ? executors : 0; }
  int intra_op_threads() const { return stock_point() ? threads_per_executor : 0; }
  // Whether it says where steps run (stock, or E or T given).
  bool names_layout() const { return stock || executors != 0 || threads_per_executor != 0; }
  // Whether both E and T are given, or it is stock.
  bool complete() const { return stock || (executors > 0 && threads_per_executor > 0); }
  // Same place to run (stock, or the same E and T), whatever the policy.
  bool SameLayout(const Setting& other) const {
    return stock == other.stock && executors == other.executors &&
           threads_per_executor == other.threads_per_executor;
  }
  // "stock", "stock:2x1", "2x1"; a field not given reads "*" ("2x*").
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

// TensorFlow's executor on I inter-op and A intra-op threads GRAPHI owns.
inline constexpr Setting StockPointSetting(int inter_op_threads, int intra_op_threads) {
  return Setting{inter_op_threads, intra_op_threads, true, std::nullopt};
}

// What ParseSetting accepts, as its errors state it.
inline constexpr char kSettingLabelsAllowed[] =
    "\"stock\", \"stock:IxA\" (TensorFlow's executor on I inter-op and A intra-op threads) "
    "or ExT (E teams of T threads), with whole numbers >= 1 (e.g. 2x1)";

// Parses a label: "stock", "stock:IxA" or "ExT" with whole numbers >= 1.
// False with an error naming `what` and the allowed values otherwise.
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
