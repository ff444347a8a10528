#include "cc/platform/env_settings.h"

#include <cerrno>
#include <cstdlib>
#include <string>

namespace graphi {
namespace {

EnvInt Parse(const char* name, const char* text, int64_t min, int64_t max, const char* word) {
  EnvInt out;
  out.set = true;
  char* end = nullptr;
  errno = 0;
  const long long parsed = std::strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || parsed < min || parsed > max) {
    out.error = std::string(name) + "='" + text + "' is not a valid setting; allowed: " +
                AllowedIntRange(min, max, word) + " (unset it to use the default)";
    return out;
  }
  out.value = parsed;
  return out;
}

}  // namespace

std::string AllowedIntRange(int64_t min, int64_t max, const char* word) {
  std::string range = max == kNoMax ? "a whole number >= " + std::to_string(min)
                                    : "a whole number from " + std::to_string(min) + " to " +
                                          std::to_string(max);
  if (word != nullptr) range += std::string(", or \"") + word + "\"";
  return range;
}

EnvInt ReadEnvInt(const char* name, int64_t min, int64_t max) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return EnvInt();
  return Parse(name, text, min, max, nullptr);
}

EnvInt ReadEnvIntOrWord(const char* name, int64_t min, int64_t max, const char* word,
                        int64_t word_value) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return EnvInt();
  if (std::string(text) == word) {
    EnvInt out;
    out.set = true;
    out.value = word_value;
    return out;
  }
  return Parse(name, text, min, max, word);
}

EnvInt ReadEnvSwitch(const char* name, bool default_on) {
  const char* text = std::getenv(name);
  EnvInt out;
  out.value = default_on ? 1 : 0;
  if (text == nullptr || *text == '\0') return out;
  out.set = true;
  const std::string value(text);
  if (value == "0" || value == "1") {
    out.value = value == "1" ? 1 : 0;
    return out;
  }
  out.error = std::string(name) + "='" + value + "' is not a valid setting; allowed: " +
              (default_on ? "0 (off) or 1 (on, the default)" : "0 (off, the default) or 1 (on)");
  return out;
}

GraphiEnvironment ReadGraphiEnvironment() {
  GraphiEnvironment env;
  const char* executors = std::getenv("GRAPHI_EXECUTORS");
  const std::string stock_point_prefix = "stock:";  // the resolver parses the rest
  if (executors != nullptr &&
      std::string(executors).compare(0, stock_point_prefix.size(), stock_point_prefix) == 0) {
    env.executors.set = true;
    env.executors.value = kEnvStock;
    env.stock_point = executors;
  } else {
    env.executors =
        ReadEnvIntOrWord("GRAPHI_EXECUTORS", 1, kMaxLayoutSetting, "stock", kEnvStock);
    if (!env.executors.ok()) {
      env.executors.error = std::string("GRAPHI_EXECUTORS='") + executors +
                            "' is not a valid setting; allowed: " +
                            AllowedIntRange(1, kMaxLayoutSetting) +
                            ", \"stock\" or \"stock:IxA\" (TensorFlow's executor on I inter-op "
                            "and A intra-op threads); unset it to use the default";
    }
  }
  env.threads_per_executor = ReadEnvInt("GRAPHI_THREADS_PER_EXECUTOR", 1, kMaxLayoutSetting);
  const char* policy = std::getenv("GRAPHI_POLICY");
  env.policy = policy == nullptr ? "" : policy;
  env.tune = ReadEnvSwitch("GRAPHI_TUNE", /*default_on=*/true);
  env.autotune = ReadEnvSwitch("GRAPHI_AUTOTUNE", /*default_on=*/true);
  env.profile = ReadEnvSwitch("GRAPHI_PROFILE", /*default_on=*/true);
  env.arrival_order = ReadEnvSwitch("GRAPHI_ARRIVAL_ORDER", /*default_on=*/true);
  env.inline_threshold_ns = ReadEnvInt("GRAPHI_INLINE_THRESHOLD_NS", 0, kNoMax);
  env.steal_threshold_ns =
      ReadEnvIntOrWord("GRAPHI_STEAL_THRESHOLD_NS", 0, kNoMax, "off", kEnvOff);
  env.share_always_ns = ReadEnvIntOrWord("GRAPHI_SHARE_ALWAYS_NS", 0, kNoMax, "off", kEnvOff);
  return env;
}

}  // namespace graphi
