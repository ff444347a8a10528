#include "cc/tuning/tuning_decision.h"

#include <algorithm>
#include <cmath>
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

// `setting`'s ratios to `other`, one per round in which both ran.
std::vector<double> RatiosTo(const std::vector<std::map<Setting, double>>& round_medians,
                             const Setting& setting, const Setting& other) {
  std::vector<double> ratios;
  for (const auto& round : round_medians) {
    auto s = round.find(setting);
    auto o = round.find(other);
    if (s == round.end() || o == round.end() || o->second <= 0) continue;
    ratios.push_back(s->second / o->second);
  }
  return ratios;
}

// Half the range of `ratios` (non-empty).
double HalfRange(const std::vector<double>& ratios) {
  const auto [lo, hi] = std::minmax_element(ratios.begin(), ratios.end());
  return (*hi - *lo) / 2;
}

// The ratio SpreadOver leaves out of the spread of `ratios` (median
// `median`), or -1 for none.
int SetAsideIndex(const std::vector<double>& ratios, double median, SpreadOver spread_over) {
  if (spread_over != SpreadOver::kAllButTheFarthest ||
      static_cast<int>(ratios.size()) < kMinRoundsToSetOneAside) {
    return -1;
  }
  int farthest = 0;
  for (int i = 1; i < static_cast<int>(ratios.size()); ++i) {
    const double d = std::abs(ratios[i] - median);
    const double d_farthest = std::abs(ratios[farthest] - median);
    if (d > d_farthest || (d == d_farthest && ratios[i] < ratios[farthest])) farthest = i;
  }
  return farthest;
}

// The median and spread the rule judges `ratios` (non-empty) by.
struct RatioSummary {
  double median = 1.0;
  double spread = 0.0;
  double set_aside = 0.0;  // 0: none
};

RatioSummary Summarize(const std::vector<double>& ratios, SpreadOver spread_over) {
  GRAPHI_DCHECK(!ratios.empty());
  RatioSummary out;
  out.median = MedianOf(ratios);
  const int aside = SetAsideIndex(ratios, out.median, spread_over);
  if (aside < 0) {
    out.spread = HalfRange(ratios);
    return out;
  }
  std::vector<double> counted = ratios;
  counted.erase(counted.begin() + aside);
  out.spread = HalfRange(counted);
  out.set_aside = ratios[aside];
  return out;
}

// Whether a setting whose `rounds` ratios to the default are summarized so
// qualifies (DecideSetting).
bool Qualifies(const RatioSummary& summary, size_t rounds) {
  return static_cast<int>(rounds) >= kMinRoundsToAdopt && summary.median + summary.spread < 1.0;
}

bool Qualifies(const std::vector<double>& ratios) {
  return !ratios.empty() && Qualifies(Summarize(ratios, SpreadOver::kEveryRound), ratios.size());
}

}  // namespace

std::vector<Setting> SettingsToEliminate(const std::vector<std::map<Setting, double>>& round_medians,
                                         const std::vector<Setting>& live,
                                         const Setting& default_setting) {
  // The settings others are judged against: the default, and those the rule
  // would adopt if the rounds ended now.
  std::vector<Setting> leaders = {default_setting};
  for (const Setting& setting : live) {
    if (setting != default_setting && Qualifies(RatiosTo(round_medians, setting, default_setting))) {
      leaders.push_back(setting);
    }
  }
  std::vector<Setting> out;
  for (const Setting& setting : live) {
    if (setting == default_setting) continue;
    for (const Setting& leader : leaders) {
      if (leader != setting && ShouldEliminate(RatiosTo(round_medians, setting, leader))) {
        out.push_back(setting);
        break;
      }
    }
  }
  return out;
}

std::vector<Setting> SettingsToScreenOut(const std::map<Setting, double>& screening_medians,
                                         const std::vector<Setting>& timed,
                                         const Setting& default_setting) {
  std::vector<Setting> out;
  const auto reference = screening_medians.find(default_setting);
  if (reference == screening_medians.end() || reference->second <= 0) return out;
  int others = 0;
  const Setting* closest = nullptr;
  double closest_median = 0;
  for (const Setting& setting : timed) {
    const auto it = screening_medians.find(setting);
    if (setting == default_setting || it == screening_medians.end()) continue;
    ++others;
    if (closest == nullptr || it->second < closest_median) {
      closest = &setting;
      closest_median = it->second;
    }
    if (it->second / reference->second > kScreenOutRatio) out.push_back(setting);
  }
  if (others > 0 && static_cast<int>(out.size()) == others) {
    out.erase(std::find(out.begin(), out.end(), *closest));
  }
  return out;
}

const SettingEvidence* RunoffCandidate(const TuningDecision& decision) {
  if (decision.adopted) return nullptr;
  const SettingEvidence* best = nullptr;
  for (const SettingEvidence& e : decision.evidence) {
    if (e.setting == decision.default_setting ||
        static_cast<int>(e.ratios.size()) < kMinRoundsToAdopt ||
        e.ratio_median >= kRunoffBelowRatio) {
      continue;
    }
    if (best == nullptr || e.ratio_median < best->ratio_median) best = &e;
  }
  return best;
}

namespace {

SettingEvidence EvidenceFor(const std::vector<std::map<Setting, double>>& round_medians,
                            const std::map<Setting, double>& screening_medians,
                            const std::vector<Setting>& screened_out, const Setting& setting,
                            const Setting& default_setting, SpreadOver spread_over) {
  SettingEvidence e;
  e.setting = setting;
  auto screened = screening_medians.find(setting);
  auto screened_default = screening_medians.find(default_setting);
  if (screened != screening_medians.end() && screened_default != screening_medians.end() &&
      screened_default->second > 0) {
    e.screening_ratio = screened->second / screened_default->second;
  }
  e.screened_out =
      std::find(screened_out.begin(), screened_out.end(), setting) != screened_out.end();
  e.ratios = RatiosTo(round_medians, setting, default_setting);
  if (!e.ratios.empty()) {
    const RatioSummary summary = Summarize(e.ratios, spread_over);
    e.ratio_median = summary.median;
    e.ratio_spread = summary.spread;
    e.set_aside_ratio = summary.set_aside;
    e.qualifies = setting != default_setting && Qualifies(summary, e.ratios.size());
  }
  return e;
}

// "0.93": how ratios read in reasons.
std::string Ratio(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.2f", value);
  return buffer;
}

// "0.93 ± 0.05".
std::string RatioAndSpread(double median, double spread) {
  return Ratio(median) + " ± " + Ratio(spread);
}

std::string RoundsText(size_t n) {
  return std::to_string(n) + (n == 1 ? " round" : " rounds");
}

// "over 4 rounds" or "over 4 rounds, the one at 1.19 set aside".
std::string OverRoundsText(const SettingEvidence& e) {
  std::string text = "over " + RoundsText(e.ratios.size());
  if (e.set_aside_ratio > 0) text += ", the one at " + Ratio(e.set_aside_ratio) + " set aside";
  return text;
}

// The decision's one sentence for users (graphi_tf and info() show it as is).
std::string ReasonFor(const TuningDecision& decision) {
  const std::string d = decision.default_setting.stock
                            ? std::string("stock (TensorFlow's own pools)")
                            : decision.default_setting.Label();
  if (decision.adopted) {
    for (const SettingEvidence& e : decision.evidence) {
      if (e.setting != decision.chosen) continue;
      return e.setting.Label() + " adopted: " + RatioAndSpread(e.ratio_median, e.ratio_spread) +
             " of the default " + d + " " + OverRoundsText(e);
    }
  }
  // The closest other setting that was compared (ties: the earlier in order).
  const SettingEvidence* closest = nullptr;
  for (const SettingEvidence& e : decision.evidence) {
    if (e.setting == decision.default_setting || e.ratios.empty()) continue;
    if (closest == nullptr || e.ratio_median < closest->ratio_median) closest = &e;
  }
  if (closest == nullptr) {
    // Nothing reached the rounds (the screening never drops every setting).
    return "kept the default " + d + ": no other setting was compared with it";
  }
  std::string detail;
  if (static_cast<int>(closest->ratios.size()) < kMinRoundsToAdopt) {
    detail = closest->setting.Label() + " at " + Ratio(closest->ratio_median) +
             " in only " + RoundsText(closest->ratios.size()) + ", " +
             std::to_string(kMinRoundsToAdopt) + " needed";
  } else {
    detail = closest->setting.Label() + " at " +
             RatioAndSpread(closest->ratio_median, closest->ratio_spread) + " " +
             OverRoundsText(*closest);
  }
  return "kept the default " + d + ": no setting beat it by more than its spread (closest: " +
         detail + ")";
}

}  // namespace

TuningDecision DecideSetting(const std::vector<std::map<Setting, double>>& round_medians,
                             const Setting& default_setting,
                             const std::vector<Setting>& order,
                             const std::map<Setting, double>& screening_medians,
                             SpreadOver spread_over) {
  TuningDecision decision;
  decision.default_setting = default_setting;
  decision.chosen = default_setting;
  const SettingEvidence* best = nullptr;
  decision.evidence.reserve(order.size());
  const std::vector<Setting> screened_out =
      SettingsToScreenOut(screening_medians, order, default_setting);
  for (const Setting& setting : order) {
    decision.evidence.push_back(
        EvidenceFor(round_medians, screening_medians, screened_out, setting, default_setting,
                    spread_over));
  }
  for (const SettingEvidence& e : decision.evidence) {
    if (e.qualifies && (best == nullptr || e.ratio_median < best->ratio_median)) best = &e;
  }
  if (best != nullptr) {
    decision.chosen = best->setting;
    decision.adopted = true;
  }
  decision.reason = ReasonFor(decision);
  return decision;
}

}  // namespace graphi
