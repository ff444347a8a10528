#include "cc/tuning/tuning_decision.h"

#include <algorithm>
#include <cstdio>

#include "cc/util/check.h"

namespace graphi {

double MedianOf(std::vector<double> values) {
  GRAPHI_DCHECK(!values.empty());
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

bool ShouldEliminate(const std::vector<double>& ratios_so_far) {
  if (ratios_so_far.size() < 2) return false;
  return *std::min_element(ratios_so_far.begin(), ratios_so_far.end()) > kEliminateRatio;
}

namespace {

SettingEvidence EvidenceFor(const std::vector<std::map<Setting, double>>& round_medians,
                            const Setting& setting, const Setting& default_setting) {
  SettingEvidence e;
  e.setting = setting;
  for (const auto& round : round_medians) {
    auto s = round.find(setting);
    auto d = round.find(default_setting);
    if (s == round.end() || d == round.end() || d->second <= 0) continue;
    e.ratios.push_back(s->second / d->second);
  }
  if (!e.ratios.empty()) {
    e.ratio_median = MedianOf(e.ratios);
    const auto [lo, hi] = std::minmax_element(e.ratios.begin(), e.ratios.end());
    e.ratio_spread = (*hi - *lo) / 2;
  }
  e.qualifies = setting != default_setting &&
                static_cast<int>(e.ratios.size()) >= kMinRoundsToAdopt &&
                e.ratio_median + e.ratio_spread < 1.0;
  return e;
}

std::string Format(const char* format, double a, double b) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), format, a, b);
  return buffer;
}

}  // namespace

TuningDecision DecideSetting(const std::vector<std::map<Setting, double>>& round_medians,
                             const Setting& default_setting,
                             const std::vector<Setting>& order) {
  TuningDecision decision;
  decision.default_setting = default_setting;
  decision.chosen = default_setting;
  const SettingEvidence* best = nullptr;
  decision.evidence.reserve(order.size());
  for (const Setting& setting : order) {
    decision.evidence.push_back(EvidenceFor(round_medians, setting, default_setting));
  }
  for (const SettingEvidence& e : decision.evidence) {
    if (e.qualifies && (best == nullptr || e.ratio_median < best->ratio_median)) best = &e;
  }
  if (best != nullptr) {
    decision.chosen = best->setting;
    decision.adopted = true;
    decision.reason = best->setting.Label() + " adopted: " +
                      Format("%.3f ± %.3f", best->ratio_median, best->ratio_spread) +
                      " of the default " + default_setting.Label() + "'s step time";
  } else {
    decision.reason = default_setting.Label() +
                      " (the default) kept: no other setting beat it by more than its spread";
  }
  return decision;
}

}  // namespace graphi
