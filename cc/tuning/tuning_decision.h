// The do-no-harm decision rule: the one rule the online autotuner
// (autotuner.h) and graphi_tf.tune (through the bindings' decide_setting and
// settings_to_eliminate) decide by. graphi_tf/decision.py only records decisions.
//
// Settings are timed in interleaved rounds; round r gives each setting s a
// median step time m[r][s]. The rule compares every setting with the default
// round by round, so noise that slows the whole machine for a round cancels
// out, and a burst inside one setting's window moves only one of its ratios:
//
//   ratio[r][s]  = m[r][s] / m[r][default]   (rounds where both ran)
//   median(s)    = median over rounds of ratio[r][s]
//   spread(s)    = half the range of ratio[r][s] (as graphi-tf ab reports)
//   s qualifies  iff it has >= kMinRoundsToAdopt ratios and
//                median(s) + spread(s) < 1   (it beats the default by more
//                                             than its spread)
//   chosen       = the qualifying setting with the lowest median (ties: the
//                  earlier in `order`), else the default.
//
// ShouldEliminate: a setting more than kEliminateRatio times slower than the
// default in every one of at least two rounds cannot win; the tuners stop
// timing it. SettingsToEliminate applies it after each round against the
// default and against every setting that qualifies on the rounds so far: a
// setting that much slower than one the rule would adopt now cannot be
// chosen over it either (its every ratio is above that setting's, so is its
// median). Timing it no longer shortens the rounds where one setting wins
// clearly (the others would take every round to the end).
//
// SettingsToScreenOut: the online autotuner first visits every setting once,
// briefly (its screening round), and times only the survivors in the rounds
// above. A setting more than kScreenOutRatio times slower than the default
// there is dropped at once, but never every one of them: the closest is then
// kept, so the exploration never ends on first visits alone. The screening
// visit is a setting's first, on fresh threads and cold caches, so it only
// warms up and screens: its figures are not among the rounds the decision
// compares (docs/design.md, "Screening").
//
// RunoffCandidate: when the rounds adopt nothing but a setting came close
// (median ratio below kRunoffBelowRatio), the online autotuner times it
// against the default again, in more rounds of visits as long as the
// rounds', and decides by the same rule from those runoff rounds alone:
// fresh evidence, so picking the closest of several noisy settings does not
// bias it (docs/design.md, "Screening and runoff"). Its spread sets aside
// the one ratio farthest from the median (SpreadOver::kAllButTheFarthest,
// from kMinRoundsToSetOneAside rounds on): a setting the runoff was run for
// is already close, and one burst of a neighbour on the VM in one of its
// four rounds kept about a quarter of real 3-7% gains from being adopted,
// while a setting 3% slower than the default was adopted about as rarely
// as before (docs/design.md, "A runoff sets one round aside").
//
// Free of TensorFlow types. Thread-safety: pure functions.
#ifndef GRAPHI_TF_CC_TUNING_TUNING_DECISION_H_
#define GRAPHI_TF_CC_TUNING_TUNING_DECISION_H_

#include <map>
#include <string>
#include <vector>

#include "cc/teams/setting.h"

namespace graphi {

// Settings are compared by layout alone (Setting, setting.h; no policy).
// kStockSetting is the online autotuner's reference, so that a graph runs on
// teams only where they beat TensorFlow's pools (autotuner.h).

inline constexpr int kMinRoundsToAdopt = 2;
// 1.1 and 1.3: on the 2-vCPU Xeon (LSTM, GoogLeNet, PathNet training steps, 15
// processes) no setting that later beat the default was above 1.14 in its
// cold first visit or above 1.05 in a warm round; GoogLeNet's one-thread and
// intra-op-only settings were 1.2-1.5x in every round and, at 1.2, stayed in
// all rounds (docs/design.md, "Screening and runoff").
inline constexpr double kEliminateRatio = 1.1;
inline constexpr double kScreenOutRatio = 1.3;
inline constexpr double kRunoffBelowRatio = 0.98;
inline constexpr int kMinRoundsToSetOneAside = 4;

// Which of a setting's ratios its spread is taken over. The median is always
// taken over every round.
enum class SpreadOver {
  kEveryRound,
  // Every round but the one whose ratio lies farthest from the median (ties:
  // the lower ratio, the one most in the setting's favour, is set aside),
  // once there are at least kMinRoundsToSetOneAside; the runoff's rule.
  kAllButTheFarthest,
};

struct SettingEvidence {
  Setting setting;
  std::vector<double> ratios;  // one per round in which both it and the default ran
  double ratio_median = 1.0;
  double ratio_spread = 0.0;  // over the ratios SpreadOver counts
  // The ratio SpreadOver::kAllButTheFarthest set aside (0: none).
  double set_aside_ratio = 0.0;
  bool qualifies = false;
  // Its ratio to the default in the screening round (0: not screened), and
  // whether that dropped it.
  double screening_ratio = 0.0;
  bool screened_out = false;
};

struct TuningDecision {
  Setting default_setting;
  Setting chosen;
  bool adopted = false;  // chosen != default_setting
  std::string reason;    // one sentence for users
  std::vector<SettingEvidence> evidence;  // in `order`
};

// round_medians[r] maps each setting timed in round r to its median (any
// unit). `order` lists the settings (the default among them).
// `screening_medians`, if any, are the screening round's (same unit): they
// only say which settings were screened out, for the evidence and reason.
// `spread_over`: kAllButTheFarthest for the runoff's rounds.
TuningDecision DecideSetting(const std::vector<std::map<Setting, double>>& round_medians,
                             const Setting& default_setting,
                             const std::vector<Setting>& order,
                             const std::map<Setting, double>& screening_medians = {},
                             SpreadOver spread_over = SpreadOver::kEveryRound);

// Whether a setting with these ratios to the default should not be timed
// again.
bool ShouldEliminate(const std::vector<double>& ratios_so_far);

// The settings of `live` (round_medians' settings still timed) that are not
// to be timed again after these rounds (ShouldEliminate above), in `live`'s
// order; never the default.
std::vector<Setting> SettingsToEliminate(const std::vector<std::map<Setting, double>>& round_medians,
                                         const std::vector<Setting>& live,
                                         const Setting& default_setting);

// The settings of `timed` (the screening round's, each with a median in
// `screening_medians`) that are not to be timed again: those more than
// kScreenOutRatio times the default's median there, except the closest when
// that would be all but the default (on a noisy day of the 2-vCPU Xeon, 2
// LSTM processes of 16 ran every candidate at 1.5-1.9x stock in its first
// visit, 2x1 among them, which beat stock warm in others). In `timed`'s
// order; never the default.
std::vector<Setting> SettingsToScreenOut(const std::map<Setting, double>& screening_medians,
                                         const std::vector<Setting>& timed,
                                         const Setting& default_setting);

// The evidence of the setting `decision` leaves close enough to the default
// for a runoff (the lowest median below kRunoffBelowRatio over at least
// kMinRoundsToAdopt rounds; ties: the earlier in order), or nullptr (also when
// the decision adopted a setting). Points into `decision`.
const SettingEvidence* RunoffCandidate(const TuningDecision& decision);

// Median of a non-empty sample (mean of the middle two for even sizes).
double MedianOf(std::vector<double> values);

}  // namespace graphi

#endif  // GRAPHI_TF_CC_TUNING_TUNING_DECISION_H_
