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
//   bound(s)     = the k-th smallest ratio, k = WinsNeeded(n) for n ratios:
//                  the least k such that a setting no faster than the
//                  default (each round a fair coin) is faster in k or more of
//                  n rounds with probability <= kSignTestAlpha. It is the
//                  upper end of the distribution-free confidence interval of
//                  the median ratio, so "bound < 1" is the sign test
//                  "faster in at least k of n rounds".
//   spread(s)    = bound(s) - median(s): how far above its median the ratio
//                  may lie
//   s qualifies  iff it has >= kMinRoundsToAdopt ratios and
//                median(s) + spread(s) < 1   (it beats the default by more
//                                             than its spread)
//   chosen       = the qualifying setting with the lowest median (ties: the
//                  earlier in `order`), else the default.
//
// Why a sign test (docs/design.md, "The sign test"): until 2026-12-07 the
// spread was half the range of the ratios. The range only grows with more
// rounds, so more evidence made that rule stricter instead of surer:
// replaying recorded visits of the 2-vCPU Xeon, it adopted a 16-23% GoogLeNet
// gain in 76% of 3-round windows and 12% of 12-round ones. The sign test
// counts a burst as one lost round, whatever its size, and adopts more
// surely the more rounds it gets. At 1 in 5, with the online autotuner's
// rounds and runoff (autotuner.h), the replay adopted a 3-7% LSTM gain in 65%
// of windows (the old plan: 49%), the GoogLeNet gain in 100% (97%), a
// setting 3% slower than the default in 4% (6%) and stock against itself
// in 18% (14%; a tie costs nothing). At 1 in 8: 46%, 100%, 1% and 4%.
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
// bias it (docs/design.md, "Screening and runoff").
//
// Curtailment (RoundsSettled, SettingsThatCannotQualify): the rounds are
// planned, but their outcome can be settled before the last. A setting
// that has already won WinsNeeded(planned) rounds qualifies whatever the
// rest show; one that cannot reach that many with the rounds left cannot.
// The online autotuner stops timing a setting that cannot qualify, unless it
// is close enough for a runoff, and ends the rounds once they are settled.
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

// Three: with kSignTestAlpha, WinsNeeded(3) = 3 (a setting faster in every
// round) and WinsNeeded(2) = 3 (1/4 for 2 of 2), so two rounds never adopt.
inline constexpr int kMinRoundsToAdopt = 3;
inline constexpr double kSignTestAlpha = 0.2;
// 1.1 and 1.3: on the 2-vCPU Xeon (LSTM, GoogLeNet, PathNet training steps, 15
// processes) no setting that later beat the default was above 1.14 in its
// cold first visit or above 1.05 in a warm round; GoogLeNet's one-thread and
// intra-op-only settings were 1.2-1.5x in every round and, at 1.2, stayed in
// all rounds (docs/design.md, "Screening and runoff").
inline constexpr double kEliminateRatio = 1.1;
inline constexpr double kScreenOutRatio = 1.3;
inline constexpr double kRunoffBelowRatio = 0.98;

// The least number of rounds out of `rounds` a setting must be faster than
// the default in (ratio < 1) to qualify; rounds + 1 when none is enough.
int WinsNeeded(int rounds);

struct SettingEvidence {
  Setting setting;
  std::vector<double> ratios;  // one per round in which both it and the default ran
  double ratio_median = 1.0;
  double ratio_spread = 0.0;  // bound - median (above); >= 0
  int wins = 0;               // ratios below 1
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
TuningDecision DecideSetting(const std::vector<std::map<Setting, double>>& round_medians,
                             const Setting& default_setting,
                             const std::vector<Setting>& order,
                             const std::map<Setting, double>& screening_medians = {});

// Whether a setting with these ratios to the default should not be timed
// again.
bool ShouldEliminate(const std::vector<double>& ratios_so_far);

// The settings of `live` (round_medians' settings still timed) that are not
// to be timed again after these rounds (ShouldEliminate above), in `live`'s
// order; never the default.
std::vector<Setting> SettingsToEliminate(const std::vector<std::map<Setting, double>>& round_medians,
                                         const std::vector<Setting>& live,
                                         const Setting& default_setting);

// The settings of `live` other than the default that cannot qualify when
// `rounds_left` more rounds follow these (even winning them all, they would
// not have WinsNeeded of the rounds in all), except those whose median ratio
// so far is below kRunoffBelowRatio: a runoff may still be run for them. In
// `live`'s order.
std::vector<Setting> SettingsThatCannotQualify(
    const std::vector<std::map<Setting, double>>& round_medians, const std::vector<Setting>& live,
    const Setting& default_setting, int rounds_left);

// Whether the outcome of the rounds is settled with `rounds_left` more to
// come: no setting of `live` but the default can still qualify, or exactly
// one can and it qualifies whatever the rounds left show.
bool RoundsSettled(const std::vector<std::map<Setting, double>>& round_medians,
                   const std::vector<Setting>& live, const Setting& default_setting,
                   int rounds_left);

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
