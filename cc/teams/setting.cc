#include "cc/teams/setting.h"

#include <cerrno>
#include <cstdlib>

namespace graphi {
namespace {

std::string Field(int value) { return value > 0 ? std::to_string(value) : "*"; }

// A whole number >= 1 spelled with digits only.
bool ParsePositive(const std::string& text, int* out) {
  if (text.empty() || text.size() > 9) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  const int value = std::atoi(text.c_str());
  if (value < 1) return false;
  *out = value;
  return true;
}

// "AxB" with whole numbers A, B >= 1.
bool ParsePair(const std::string& text, int* a, int* b) {
  const size_t x = text.find('x');
  return x != std::string::npos && ParsePositive(text.substr(0, x), a) &&
         ParsePositive(text.substr(x + 1), b);
}

constexpr char kStockPointPrefix[] = "stock:";

}  // namespace

std::string Setting::Label() const {
  if (stock_point()) return kStockPointPrefix + Field(executors) + "x" + Field(threads_per_executor);
  if (stock) return "stock";
  return Field(executors) + "x" + Field(threads_per_executor);
}

bool ParseSetting(const std::string& text, const char* what, Setting* out, std::string* error) {
  if (text == "stock") {
    *out = kStockSetting;
    return true;
  }
  int a = 0, b = 0;
  const std::string prefix = kStockPointPrefix;
  if (text.compare(0, prefix.size(), prefix) == 0) {
    if (ParsePair(text.substr(prefix.size()), &a, &b)) {
      *out = StockPointSetting(a, b);
      return true;
    }
  } else if (ParsePair(text, &a, &b)) {
    *out = TeamsSetting(a, b);
    return true;
  }
  *error = std::string(what) + "='" + text + "' is not a valid setting; allowed: " +
           kSettingLabelsAllowed;
  return false;
}

const char* SettingSourceName(SettingSource source) {
  switch (source) {
    case SettingSource::kConfigure: return "configure";
    case SettingSource::kEnvironment: return "environment";
    case SettingSource::kAutotune: return "autotune";
    case SettingSource::kCache: return "cache";
    case SettingSource::kTuned: return "tuned";
    case SettingSource::kAutotuned: return "autotuned";
    case SettingSource::kDefault: return "default";
  }
  return "default";
}

bool IsAdoptedSource(SettingSource source) {
  return source == SettingSource::kCache || source == SettingSource::kTuned ||
         source == SettingSource::kAutotuned;
}

bool ParseAdoptedSource(const std::string& name, SettingSource* out, std::string* error) {
  for (SettingSource source :
       {SettingSource::kCache, SettingSource::kTuned, SettingSource::kAutotuned}) {
    if (name == SettingSourceName(source)) {
      *out = source;
      return true;
    }
  }
  *error = "source='" + name + "' is not valid; allowed: cache, tuned, autotuned";
  return false;
}

}  // namespace graphi
