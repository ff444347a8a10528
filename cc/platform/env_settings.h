// GRAPHI's settings from the environment, read one way and in one place.
//
// ReadGraphiEnvironment() reads every GRAPHI_* variable the native library
// knows into a GraphiEnvironment snapshot; no other file calls getenv for
// them. The Runtime takes a snapshot when the library loads, at configure()
// and when an executor is created (runtime.h); nothing reads the environment
// on a step's path.
//
// A setting is unset (or empty): the caller's default applies. Set, it must
// be a whole number in [min, max] (or, for ReadEnvIntOrWord, the one word it
// also accepts); anything else is an error that names the variable, the
// value and the allowed range, and the caller reports it (a Status, a Python
// exception) instead of running with a value the user did not ask for.
//
// Free of TensorFlow types. Thread-safety: thread-safe (reads the
// environment; callers must not setenv concurrently, as for getenv).
#ifndef GRAPHI_TF_CC_PLATFORM_ENV_SETTINGS_H_
#define GRAPHI_TF_CC_PLATFORM_ENV_SETTINGS_H_

#include <cstdint>
#include <limits>
#include <string>

namespace graphi {

inline constexpr int64_t kNoMax = std::numeric_limits<int64_t>::max();

// The largest GRAPHI_EXECUTORS / GRAPHI_THREADS_PER_EXECUTOR the environment
// may ask for: more than any machine has cores, small enough that a typo
// (an extra digit) is an error rather than a huge layout request.
inline constexpr int kMaxLayoutSetting = 4096;

// What GRAPHI_EXECUTORS=stock reads as (TensorFlow's own pools), and what
// the thresholds' "off" reads as.
inline constexpr int64_t kEnvStock = -1;
inline constexpr int64_t kEnvOff = -1;

// One environment setting as read: unset, a value, or an error.
struct EnvInt {
  bool set = false;    // present and non-empty (also when invalid)
  int64_t value = 0;   // the value when set and ok()
  std::string error;   // non-empty: names the setting and its allowed values

  bool ok() const { return error.empty(); }
  // The value, or `fallback` when unset (call only when ok()).
  int64_t value_or(int64_t fallback) const { return set ? value : fallback; }
};

// Reads `name` as a whole number in [min, max] (max kNoMax: no upper bound).
EnvInt ReadEnvInt(const char* name, int64_t min, int64_t max);

// Like ReadEnvInt, but the word `word` is also allowed and reads as
// `word_value` (e.g. "off" as -1).
EnvInt ReadEnvIntOrWord(const char* name, int64_t min, int64_t max, const char* word,
                        int64_t word_value);

// Reads `name` as an on/off switch: "0" (off) or "1" (on); unset means
// `default_on`. `value` is 0 or 1, the default when unset.
EnvInt ReadEnvSwitch(const char* name, bool default_on);

// Every GRAPHI_* variable the native library reads, as read at one moment.
// Each field is unset, a value, or an error naming the variable.
struct GraphiEnvironment {
  // The team layout (the Runtime, setting_resolver.h).
  // GRAPHI_EXECUTORS: 1..kMaxLayoutSetting, "stock" (kEnvStock) or
  // "stock:IxA" (kEnvStock, and the text in stock_point for the resolver).
  EnvInt executors;
  std::string stock_point;      // GRAPHI_EXECUTORS as written when it starts "stock:", else ""
  EnvInt threads_per_executor;  // GRAPHI_THREADS_PER_EXECUTOR: 1..kMaxLayoutSetting
  std::string policy;           // GRAPHI_POLICY as written ("" unset; the resolver parses it)
  // Switches, 0 or 1 (on when unset).
  EnvInt tune;      // GRAPHI_TUNE: everything automatic
  EnvInt autotune;  // GRAPHI_AUTOTUNE: online autotuning
  // The executor's knobs (graphi_executor.h).
  EnvInt profile;              // GRAPHI_PROFILE switch
  EnvInt arrival_order;        // GRAPHI_ARRIVAL_ORDER switch
  EnvInt inline_threshold_ns;  // GRAPHI_INLINE_THRESHOLD_NS >= 0
  EnvInt steal_threshold_ns;   // GRAPHI_STEAL_THRESHOLD_NS >= 0 or "off" (kEnvOff)
  EnvInt share_always_ns;      // GRAPHI_SHARE_ALWAYS_NS >= 0 or "off" (kEnvOff)
};

// Reads the snapshot (callers must not setenv concurrently, as for getenv).
GraphiEnvironment ReadGraphiEnvironment();

// The allowed values, as error messages state them: "a whole number from 1
// to 4096", "a whole number >= 0", plus `or "word"` when a word is allowed.
std::string AllowedIntRange(int64_t min, int64_t max, const char* word = nullptr);

}  // namespace graphi

#endif  // GRAPHI_TF_CC_PLATFORM_ENV_SETTINGS_H_
