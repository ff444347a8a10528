// GRAPHI's integer settings from the environment, read one way.
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

// The allowed values, as error messages state them: "a whole number from 1
// to 4096", "a whole number >= 0", plus `or "word"` when a word is allowed.
std::string AllowedIntRange(int64_t min, int64_t max, const char* word = nullptr);

}  // namespace graphi

#endif  // GRAPHI_TF_CC_PLATFORM_ENV_SETTINGS_H_
