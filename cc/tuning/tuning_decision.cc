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

int WinsNeeded(int rounds) {
  GRAPHI_DCHECK(rounds >= 0);
  // P(at least k of n fair coin flips) for k = n, n-1, ...: the least k
  // whose tail stays within kSignTestAlpha. Exact in doubles for any n the
  // tuners run (binomial coefficients stay far below 2^53 up to n = 50).
  const int n = rounds;
  double coefficient = 1;  // C(n, k), from k = n down
  double tail = 0;         // sum of C(n, j) for j >= k
  const double all = std::ldexp(1.0, n);
  int needed = n + 1;
  for (int k = n; k >= 0; --k) {
    tail += coefficient;
    if (tail / all > kSignTestAlpha) break;
    needed = k;
    coefficient = coefficient * k / (n - k + 1);
  }
  return needed;
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

int WinsOf(const std::vector<double>& ratios) {
  return static_cast<int>(std::count_if(ratios.begin(), ratios.end(),
                                        [](double r) { return r < 1.0; }));
}

// The median and spread the rule judges `ratios` (non-empty) by.
struct RatioSummary {
  double median = 1.0;
  double spread = 0.0;
  int wins = 0;
};

RatioSummary Summarize(std::vector<double> ratios) {
  GRAPHI_DCHECK(!ratios.empty());
  RatioSummary out;
  out.median = MedianOf(ratios);
  out.wins = WinsOf(ratios);
  std::sort(ratios.begin(), ratios.end());
  const int n = static_cast<int>(ratios.size());
  // The bound: the WinsNeeded(n)-th smallest ratio; with too few rounds for
  // any count to be enough, the largest (the spread then only describes).
  const int k = std::min(WinsNeeded(n), n);
  out.spread = std::max(0.0, ratios[k - 1] - out.median);
  return out;
}

// The sign test (tuning_decision.h): whether `wins` of `rounds` ratios
// below 1 qualify a setting. median + spread < 1 holds iff this does; the
// count is what is checked, so that rounding in the subtraction cannot
// disagree with it.
bool Qualifies(int wins, int rounds) {
  return rounds >= kMinRoundsToAdopt && wins >= WinsNeeded(rounds);
}

bool Qualifies(const std::vector<double>& ratios) {
  return Qualifies(WinsOf(ratios), static_cast<int>(ratios.size()));
}

// Whether a setting with these ratios could still qualify after
// `rounds_left` more rounds (winning them all), and whether it will
// whatever they show.
bool CanStillQualify(const std::vector<double>& ratios, int rounds_left) {
  return Qualifies(WinsOf(ratios) + rounds_left, static_cast<int>(ratios.size()) + rounds_left);
}

bool SureToQualify(const std::vector<double>& ratios, int rounds_left) {
  return Qualifies(WinsOf(ratios), static_cast<int>(ratios.size()) + rounds_left);
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

std::vector<Setting> SettingsThatCannotQualify(
    const std::vector<std::map<Setting, double>>& round_medians, const std::vector<Setting>& live,
    const Setting& default_setting, int rounds_left) {
  std::vector<Setting> out;
  for (const Setting& setting : live) {
    if (setting == default_setting) continue;
    const std::vector<double> ratios = RatiosTo(round_medians, setting, default_setting);
    if (ratios.empty() || CanStillQualify(ratios, rounds_left)) continue;
    if (MedianOf(ratios) < kRunoffBelowRatio) continue;  // a runoff may still be run for it
    out.push_back(setting);
  }
  return out;
}

bool RoundsSettled(const std::vector<std::map<Setting, double>>& round_medians,
                   const std::vector<Setting>& live, const Setting& default_setting,
                   int rounds_left) {
  int can = 0;
  bool sure = false;
  for (const Setting& setting : live) {
    if (setting == default_setting) continue;
    const std::vector<double> ratios = RatiosTo(round_medians, setting, default_setting);
    if (!CanStillQualify(ratios, rounds_left)) continue;
    ++can;
    sure = SureToQualify(ratios, rounds_left);
  }
  return can == 0 || (can == 1 && sure);
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
                            const Setting& default_setting) {
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
    const RatioSummary summary = Summarize(e.ratios);
    e.ratio_median = summary.median;
    e.ratio_spread = summary.spread;
    e.wins = summary.wins;
    e.qualifies = setting != default_setting &&
                  Qualifies(summary.wins, static_cast<int>(e.ratios.size()));
  }
  return e;
}

// "0.93": how ratios read in reasons.
std::string Ratio(double value) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.2f", value);
  return buffer;
}

std::string RoundsText(size_t n) {
  return std::to_string(n) + (n == 1 ? " round" : " rounds");
}

// "faster in 10 of 12 rounds, 9 needed".
std::string WinsText(const SettingEvidence& e) {
  const int n = static_cast<int>(e.ratios.size());
  return "faster in " + std::to_string(e.wins) + " of " + RoundsText(n) + ", " +
         std::to_string(WinsNeeded(n)) + " needed";
}

// The decision's one sentence for users (graphi_tf and info() show it as is).
std::string ReasonFor(const TuningDecision& decision) {
  const std::string d = decision.default_setting.stock
                            ? std::string("stock (TensorFlow's own pools)")
                            : decision.default_setting.Label();
  if (decision.adopted) {
    for (const SettingEvidence& e : decision.evidence) {
      if (e.setting != decision.chosen) continue;
      return e.setting.Label() + " adopted: " + Ratio(e.ratio_median) + " of the default " + d +
             ", " + WinsText(e);
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
    detail = closest->setting.Label() + " at " + Ratio(closest->ratio_median) + ", " +
             WinsText(*closest);
  }
  return "kept the default " + d + ": no setting beat it by more than its spread (closest: " +
         detail + ")";
}

}  // namespace

TuningDecision DecideSetting(const std::vector<std::map<Setting, double>>& round_medians,
                             const Setting& default_setting,
                             const std::vector<Setting>& order,
                             const std::map<Setting, double>& screening_medians) {
  TuningDecision decision;
  decision.default_setting = default_setting;
  decision.chosen = default_setting;
  const SettingEvidence* best = nullptr;
  decision.evidence.reserve(order.size());
  const std::vector<Setting> screened_out =
      SettingsToScreenOut(screening_medians, order, default_setting);
  for (const Setting& setting : order) {
    decision.evidence.push_back(
        EvidenceFor(round_medians, screening_medians, screened_out, setting, default_setting));
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
