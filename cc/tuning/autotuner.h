// Zero-config autotuning: the team layout of a process's main graph is tuned
// online, during its first steps, by the rule of tuning_decision.h.
//
// A graph with no cached or tuned setting that has finished `settle_steps`
// steps over at least `settle_min_ns`, and is the largest graph the process has
// run so far, is explored:
// its next steps run under each candidate layout in turn. First a screening
// round visits every setting once, briefly (`screening_timed_per_visit` timed
// steps): a setting's first visit runs on fresh threads and cold caches, so
// it warms the setting up, and one far slower than the default is dropped
// there, but never all of them (SettingsToScreenOut: the closest stays, so a
// decision always rests on warm rounds). The survivors are then timed in
// interleaved rounds whose order rotates every round. Each visit of a setting
// discards its first step (fresh teams, cold caches) and times the next few;
// the visit's median is that round's figure. After every round a setting that
// is clearly slower than the default, or than a setting that beats the
// default so far (SettingsToEliminate), is dropped, and so is one that
// can no longer qualify in the rounds left unless it is close enough for a
// runoff (SettingsThatCannotQualify). The rounds end early once their
// outcome is settled (RoundsSettled), and so does the runoff. When the
// rounds are done, DecideSetting picks the layout from those rounds — a
// non-default one only if it beat the default by more than its spread. If it
// picked none but one setting came close (RunoffCandidate), that setting and
// the default are timed again in `runoff_rounds` rounds of visits as long as
// the rounds' (longer ones did not make a round's figure steadier: the noise
// lies between visits, docs/design.md), and the rule decides from those rounds
// alone (steps shorter than long_step_ns only: longer ones would make the
// runoff cost seconds per visit). The LayoutControl adopts the decision (the
// caller then caches it, so a later process starts tuned).
//
// One step at a time, a visit's figures are the times between the
// completions of its steps (from the end of the previous step to the end of
// this one), not the steps' own durations: that time includes what the
// caller does between steps (a Python loop, a serving request's argument
// and result handling), and a layout can slow the caller down while its
// steps take no longer (docs/design.md, "Automatic tuning").
//
// Visit sizes follow the step time seen while settling, so a small model
// spends a few seconds at most: at least `visit_target_ns` of timed steps per
// visit (at least `min_timed_per_visit`, at most `max_timed_per_visit`),
// `rounds_short` rounds after the screening round; steps of `long_step_ns` or
// more get `rounds_long` rounds of one timed step each.
//
// Under load: a graph whose settling steps overlapped (concurrent requests,
// serving) is explored under that load. A step's latency then says little
// about a layout, so each visit is judged by its throughput: after the
// visit's first `in_flight` completions, and after the last completion of a
// step started on the previous layout (until then it competed with the
// visit's steps), the figure is the time per completed request, (end of the
// last timed completion - that mark) / timed completions; the rule is the
// same. The status's load_clients
// says how many steps were in flight.
//
// Decisions are per load class (load_class.h): one step at a time
// (kAlone) or a level of steps in flight (2, 3-5, 6-11, ...). A layout that
// wins for one request at a time can lose under many (one team serving
// every request), and one that ties under 4 clients can lose under 8, so
// each class has its own setting, adopted and cached for (signature, class);
// the process follows the setting of the class the graph is in now
// (StepSample::load_class, which changes after 16 steps in a row of other
// classes). A graph is explored for the class it is in, once that class has
// held long enough for the step itself to agree with it
// (LoadClassOf(in_flight) == load_class): a graph whose steps begin to
// overlap waits for its level. A graph explored one step at a time whose
// steps start to overlap is explored under load once its level holds; one
// explored under load whose level changes is explored at the new level. An
// exploration the load left is paused, not dropped: when the load comes back
// to its class it resumes with the visit it was in (that visit starts over),
// so a load that moves more often than an exploration lasts still gets each
// class decided, and no class is explored twice. A graph decided for one
// class (here, or by a cached or tuned setting) is explored for another
// class, once per process, when it enters that class and no setting for it
// is cached. A setting from graphi_tf.tune is for kAlone and is never
// explored again for that class.
//
// Exploration is abandoned (the default layout kept, nothing adopted, so a
// later process tries again) when an explicit setting
// (configure() or the environment) takes over, when autotuning is switched
// off, or when a larger graph starts running.
//
// Layout changes are made by the LayoutControl between steps: a new layout
// applies to steps that start after the call; a step that started before it
// is not counted.
//
// Free of TensorFlow types. Thread-safety: thread-safe; OnStep() may be
// called concurrently from any thread. LayoutControl methods are called with
// the autotuner's lock held, so they must not call back into it.
#ifndef GRAPHI_TF_CC_TUNING_AUTOTUNER_H_
#define GRAPHI_TF_CC_TUNING_AUTOTUNER_H_

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cc/tuning/load_class.h"
#include "cc/tuning/tuning_decision.h"
#include "cc/util/mutex.h"
#include "cc/util/thread_annotations.h"

namespace graphi {

// What the autotuner asks of the process: the layout switch and its rules.
class LayoutControl {
 public:
  virtual ~LayoutControl() = default;
  // Whether autotuning is on (GRAPHI_AUTOTUNE, configure(autotune=...)).
  virtual bool AutotuneEnabled() = 0;
  // Whether configure() or the environment pins the layout (explicit
  // settings always win over autotuning).
  virtual bool ExplicitLayout() = 0;
  // Runs later steps on `setting` until StopExploring().
  virtual void Explore(const Setting& setting) = 0;
  virtual void StopExploring() = 0;
  // Records `chosen` as graph `signature`'s setting for `load_class`
  // (source "autotuned").
  virtual void Adopt(const std::string& signature, const Setting& chosen,
                     LoadClass load_class) = 0;
};

struct AutotuneOptions {
  std::vector<Setting> candidates;  // must include default_setting
  Setting default_setting = TeamsSetting(1, 1);
  int settle_steps = 3;
  // ... and at least this long since its first step began: a process's first
  // fraction of a second (allocator pools, caches, the OS's placement of new
  // threads) is not what it runs like later. LSTM serving, 1.5 ms steps, one
  // process per setting tried: explored from step 3, every layout looked the
  // same; from 0.5 s on (with longer visits), the layout that served 1.2x
  // the requests later won.
  int64_t settle_min_ns = 500 * 1000 * 1000;
  // A visit times the fewest steps that last this long. 20 ms (60 until
  // 2026-12-07): under the sign test (tuning_decision.h) a round counts as
  // won or lost whatever its size, and replaying recorded visits of 16 steps
  // (LSTM and GoogLeNet training steps of 20-40 ms, 2-vCPU Xeon), visits of
  // one timed step decided as well as visits of two or more in as many
  // rounds, for half the steps: the noise lies between visits, not between
  // the steps of one (docs/design.md, "Visit length", "The sign test").
  int64_t visit_target_ns = 20 * 1000 * 1000;
  // Timed steps a visit of the rounds or the runoff takes at least, for
  // steps shorter than discard_below_ns and for longer ones (each 100 ms or
  // more of evidence). Under load: the same, per client.
  int min_timed_per_visit = 1;
  int min_timed_per_visit_of_long_steps = 1;
  // The screening round's visits (under load: per client).
  int screening_timed_per_visit = 2;
  // Visits of small steps: enough of them that one visit's figure is not
  // that of a few milliseconds (about visit_target_ns up to here).
  int max_timed_per_visit = 64;
  // Steps at least this long are not discarded after a switch: the fresh
  // teams' start-up is small next to them.
  int64_t discard_below_ns = 100 * 1000 * 1000;
  // Steps at least this long get rounds_long rounds of one timed step.
  int64_t long_step_ns = 1000 * 1000 * 1000;
  // Rounds after the screening round, at most: the rounds end sooner once
  // their outcome is settled (RoundsSettled, tuning_decision.h). Twelve, and
  // a runoff of eight (3 and 4 until 2026-12-07, under the rule of median +
  // half the range): replaying recorded visits of 20-40 ms steps
  // (docs/results/decision_rule_replay_2026-12-07/), this plan adopted a
  // 3-7% LSTM gain in 65% of windows, a 16-23% GoogLeNet gain in 100%, a
  // setting 3% slower than stock in 4% and stock against itself in 18%, in
  // 7-11 rounds on average (runoff included).
  int rounds_short = 12;
  // Five, so that one lost round of one-step visits does not veto a setting:
  // the sign test needs 3 wins of 3 rounds but 4 of 5. With 3 (until
  // 2026-12-07) a phased LSTM step of ~1.3 s on TensorFlow's default pools
  // kept them in one of two processes although stock:2x1 ran it 18% faster:
  // one visit timed stock:2x1 at 1433 ms against the default's 1425, and it
  // was dropped after that round (docs/results/
  // lockstep_rechecks_xeon106_2026-12-07/). The rounds still end once their
  // outcome is settled.
  int rounds_long = 5;
  // The runoff between the default and a close setting (see above), at most.
  int runoff_rounds = 8;
  // Monotonic clock (ns); tests inject a fake one.
  std::function<int64_t()> clock;
};

// One finished step of a graph, as the executor saw it.
struct StepSample {
  std::string signature;
  int node_count = 0;
  // Whether a cached, tuned or autotuned setting exists for each load class.
  std::array<bool, kLoadClassCount> adopted{};
  // The graph's load class, this step counted (GraphProfile's tracker).
  LoadClass load_class = LoadClass::kAlone;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  bool ok = true;             // the step succeeded
  bool concurrent = false;    // another step of the graph was in flight
  // Steps of the graph in flight while it ran, itself included: the more of
  // those at its start and at its end, 2 at least when it overlapped
  // (GraphLoad::StepInFlight).
  int in_flight = 1;
};

enum class AutotuneState {
  kWaiting,      // not (yet) explored: settling, not the main graph, or off
  kExploring,
  kAdopted,      // a non-default setting won and was adopted
  kKeptDefault,  // no setting beat the default by more than its spread
  kSkipped,      // not explored, or exploration abandoned (see reason)
};
const char* AutotuneStateName(AutotuneState state);

struct AutotuneStatus {
  AutotuneState state = AutotuneState::kWaiting;
  std::string reason;
  int visits_done = 0;
  int visits_planned = 0;
  int rounds = 0;
  int discard_per_visit = 0;  // under load: completions
  int timed_per_visit = 0;    // under load: completions
  int screening_timed_per_visit = 0;  // the same in the screening round
  int runoff_timed_per_visit = 0;     // the same in the runoff (0: no runoff possible)
  // > 0: explored under load, with this many steps in flight at most while
  // settling; figures are then ns per completed request (see above).
  int load_clients = 0;
  // The class explored (under load iff load_clients > 0), and decided for.
  LoadClass load_class = LoadClass::kAlone;
  Setting current;  // layout being visited (while exploring)
  Setting chosen;   // after the decision
  // Time the exploring steps took beyond what the reference (default)
  // layout would have taken, estimated from the default's medians (not
  // estimated under load: 0).
  int64_t cost_ns = 0;
  int64_t exploration_wall_ns = 0;
  int64_t reference_step_ns = 0;  // the default's step time (settling, then its rounds)
  // The screening round's medians (ns), the later rounds' medians (ns), and
  // the decision, made from the later rounds, once made.
  std::map<Setting, double> screening_medians_ns;
  std::vector<std::map<Setting, double>> round_medians_ns;
  // The 0-based round (of round_medians_ns) after which a setting was no
  // longer timed; settings screened out are not here (see screening_medians_ns).
  std::map<Setting, int> eliminated_after_round;
  // The runoff, if there was one: its setting (against the default) and its
  // rounds' medians (ns), from which the decision was then made.
  bool runoff = false;
  Setting runoff_setting;
  std::vector<std::map<Setting, double>> runoff_medians_ns;
  std::vector<Setting> order;
  TuningDecision decision;
};

struct AutotuneResult {
  std::string signature;
  AutotuneStatus status;
};

class Autotuner {
 public:
  Autotuner(AutotuneOptions options, LayoutControl* control);

  // Feeds one finished step; may switch the layout for the next steps.
  void OnStep(const StepSample& sample) GRAPHI_LOCKS_EXCLUDED(mu_);

  // The settings it explores (the default among them), in its order.
  const std::vector<Setting>& candidates() const { return options_.candidates; }

  // The state of graph `signature`; false if no step of it was seen.
  bool Status(const std::string& signature, AutotuneStatus* out) const
      GRAPHI_LOCKS_EXCLUDED(mu_);

  // Decisions made since the last call (adopted or kept default), for the
  // caller to persist.
  std::vector<AutotuneResult> TakeDecisions() GRAPHI_LOCKS_EXCLUDED(mu_);
  // Waits up to `timeout_ns` for an untaken decision; returns whether one is
  // there.
  bool WaitForDecisions(int64_t timeout_ns) GRAPHI_LOCKS_EXCLUDED(mu_);

  // Forgets everything (stops exploring first).
  void Reset() GRAPHI_LOCKS_EXCLUDED(mu_);

 private:
  // Where an exploration stands: in the screening round, in round `round` of
  // the rounds, or in round `round` of the runoff; the settings still timed,
  // the round's order and the visit of it in progress.
  enum class Stage { kScreening, kRounds, kRunoff };
  struct Progress {
    Stage stage = Stage::kScreening;
    int round = 0;
    std::vector<Setting> live;
    std::vector<Setting> round_order;
    size_t visit_index = 0;
  };
  // An exploration the load left before it decided, set aside with what it
  // had measured; it resumes, with the visit it was in, when the load comes
  // back to its class.
  struct Paused {
    AutotuneStatus status;
    Progress progress;
    int64_t explored_ns = 0;  // time spent exploring before the pause
  };
  struct Track {
    int node_count = 0;
    int ok_steps = 0;
    int64_t first_start_ns = -1;  // of its first finished step
    std::vector<int64_t> settle_ns;
    // The durations and steps in flight of its last settle_steps steps,
    // oldest first.
    std::vector<int64_t> recent_ns;
    std::vector<int> recent_in_flight;
    // Per load class: explored in this process (started), so not again.
    std::array<bool, kLoadClassCount> explored{};
    // Skipped because a setting was adopted for the class it started in;
    // such a graph (like a decided one) may be explored for another.
    bool skipped_for_adoption = false;
    // Per load class: the exploration paused there (see Paused), and the
    // status of the decision made there in this process, shown again when
    // the graph comes back to the class.
    std::array<std::optional<Paused>, kLoadClassCount> paused;
    std::array<std::optional<AutotuneStatus>, kLoadClassCount> decided;
    AutotuneStatus status;
  };

  // Explores `signature` for `load_class` if it is due (settled, the main
  // graph, nothing explicit or cached for that class), else notes why not in
  // its status.
  void MaybeStartLocked(const std::string& signature, Track* track, const StepSample& s,
                        LoadClass load_class) GRAPHI_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether step `s` ran at the level of the class its graph is in (the
  // class has held long enough to be explored).
  static bool StepAgreesWithItsClass(const StepSample& s);
  // While exploring `s`'s graph: pauses the exploration if the load left
  // the class being explored; returns whether it did.
  bool PauseIfTheLoadChangedLocked(Track* track, const StepSample& s)
      GRAPHI_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sets the exploration in progress aside (Paused) and goes back to the
  // default; `why` goes into the status.
  void PauseLocked(Track* track, const std::string& why) GRAPHI_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether a graph decided for one class (here or by an adopted setting)
  // should now be explored for the class it is in; if so, resets its status
  // for that.
  bool DueForClassExplorationLocked(Track* track, const StepSample& s)
      GRAPHI_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether `track` may be explored for `load_class` now; if not, its
  // status says why.
  bool DueForExplorationLocked(Track* track, const StepSample& s, LoadClass load_class)
      GRAPHI_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Sizes the visits from the settling steps and orders the settings.
  void PlanVisits(Track* track, LoadClass load_class) const;
  // Counts a step of the graph being explored toward the current visit.
  void RecordLocked(Track* track, const StepSample& s) GRAPHI_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The same under load: counts a completion.
  void RecordUnderLoadLocked(Track* track, const StepSample& s)
      GRAPHI_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends the current visit: the next one, the next round, or the decision.
  void FinishVisitLocked(Track* track) GRAPHI_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops the settings that cannot win any more after a round.
  void EliminateLocked(Track* track) GRAPHI_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Drops the settings far slower than the default after the screening round.
  void ScreenOutLocked(Track* track) GRAPHI_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Starts the next round of the live settings (rotated), or, after the
  // last, the runoff or the decision.
  void NextRoundLocked(Track* track) GRAPHI_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // After the rounds: starts a runoff if the rounds leave a close setting
  // (and none ran yet), else decides.
  void RunoffOrDecideLocked(Track* track) GRAPHI_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Starts the visits of a round of `live_`, rotated by `rotation`.
  void StartRoundLocked(Track* track, int rotation) GRAPHI_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Timed steps (under load: completions) the current visit needs.
  int TimedThisVisitLocked(const AutotuneStatus& st) const GRAPHI_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void StartVisitLocked(Track* track) GRAPHI_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends the exploration with `decision` (DecideSetting on the rounds, or on
  // the runoff's rounds after one).
  void DecideLocked(Track* track, TuningDecision decision) GRAPHI_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void AbandonLocked(const std::string& reason) GRAPHI_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool LargerGraphSettledLocked(int node_count) const GRAPHI_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  int64_t Now() const;

  const AutotuneOptions options_;
  LayoutControl* const control_;

  mutable Mutex mu_;
  CondVar decided_cv_;
  std::map<std::string, Track> tracks_ GRAPHI_GUARDED_BY(mu_);
  std::string target_ GRAPHI_GUARDED_BY(mu_);  // empty: not exploring
  Progress progress_ GRAPHI_GUARDED_BY(mu_);  // target_'s exploration
  int64_t visit_start_ns_ GRAPHI_GUARDED_BY(mu_) = 0;
  // Under load: the end of the visit's last discarded completion. One step
  // at a time: the end of the visit's previous step (at first, the visit's
  // start).
  int64_t visit_mark_ns_ GRAPHI_GUARDED_BY(mu_) = 0;
  int visit_steps_ GRAPHI_GUARDED_BY(mu_) = 0;
  std::vector<double> visit_timed_ns_ GRAPHI_GUARDED_BY(mu_);
  int64_t exploration_start_ns_ GRAPHI_GUARDED_BY(mu_) = 0;
  std::vector<AutotuneResult> decisions_ GRAPHI_GUARDED_BY(mu_);
};

}  // namespace graphi

#endif  // GRAPHI_TF_CC_TUNING_AUTOTUNER_H_
