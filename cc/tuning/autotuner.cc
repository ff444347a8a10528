#include "cc/tuning/autotuner.h"

#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "cc/util/check.h"
#include "cc/util/clock.h"

namespace graphi {
namespace {

// The fewest steps of `step_ns` that last at least `target_ns` (both > 0).
int64_t StepsLasting(int64_t target_ns, int64_t step_ns) {
  GRAPHI_DCHECK(target_ns > 0 && step_ns > 0);
  return (target_ns + step_ns - 1) / step_ns;
}

// Removes the settings of `drop` from `live`, keeping the others' order.
void RemoveSettings(const std::vector<Setting>& drop, std::vector<Setting>* live) {
  live->erase(std::remove_if(live->begin(), live->end(),
                             [&drop](const Setting& setting) {
                               return std::find(drop.begin(), drop.end(), setting) != drop.end();
                             }),
              live->end());
}

// Why a graph waits while autotuning is off (Status): it says so rather than
// leaving "waiting" unexplained (info(), graphi-tf ab's report).
constexpr char kAutotuneOffReason[] =
    "autotuning is off (GRAPHI_AUTOTUNE=0, GRAPHI_TUNE=0 or configure(autotune=False))";

}  // namespace

const char* AutotuneStateName(AutotuneState state) {
  switch (state) {
    case AutotuneState::kWaiting:
      return "waiting";
    case AutotuneState::kExploring:
      return "exploring";
    case AutotuneState::kAdopted:
      return "adopted";
    case AutotuneState::kKeptDefault:
      return "kept_default";
    case AutotuneState::kSkipped:
      return "skipped";
  }
  return "unknown";
}

Autotuner::Autotuner(AutotuneOptions options, LayoutControl* control)
    : options_(std::move(options)), control_(control) {
  GRAPHI_DCHECK(std::find(options_.candidates.begin(), options_.candidates.end(),
                   options_.default_setting) != options_.candidates.end());
}

int64_t Autotuner::Now() const {
  return options_.clock ? options_.clock() : MonotonicNowNs();
}

void Autotuner::OnStep(const StepSample& s) {
  MutexLock l(&mu_);
  Track& track = tracks_[s.signature];
  track.node_count = s.node_count;
  const bool exploring = !target_.empty();
  if (!control_->AutotuneEnabled()) {
    if (exploring) AbandonLocked("autotuning was switched off");
    return;
  }
  if (exploring && s.signature == target_) {
    if (control_->ExplicitLayout()) {
      AbandonLocked("an explicit setting (configure() or the environment) took over");
    } else if (!PauseIfTheLoadChangedLocked(&track, s) && s.ok) {
      RecordLocked(&track, s);
    }
    return;
  }
  if (!s.ok) return;  // a failed step says nothing about speed
  ++track.ok_steps;
  if (track.first_start_ns < 0) track.first_start_ns = s.start_ns;
  track.recent_ns.push_back(s.end_ns - s.start_ns);
  track.recent_in_flight.push_back(s.in_flight);
  if (static_cast<int>(track.recent_ns.size()) > std::max(1, options_.settle_steps)) {
    track.recent_ns.erase(track.recent_ns.begin());
    track.recent_in_flight.erase(track.recent_in_flight.begin());
  }
  if (!exploring && DueForClassExplorationLocked(&track, s)) {
    MaybeStartLocked(s.signature, &track, s, s.load_class);
    return;
  }
  if (track.status.state != AutotuneState::kWaiting) return;
  if (track.ok_steps <= options_.settle_steps) track.settle_ns.push_back(s.end_ns - s.start_ns);
  if (exploring) {
    // Another graph is being explored; a larger one that has settled takes
    // over (the main graph is the largest that runs).
    const bool any_adoption =
        std::any_of(s.adopted.begin(), s.adopted.end(), [](bool adopted) { return adopted; });
    if (track.ok_steps >= options_.settle_steps && !any_adoption &&
        s.node_count > tracks_[target_].node_count) {
      AbandonLocked("a larger graph started running");
    } else {
      return;
    }
  }
  // A graph whose load is changing waits for its class to hold.
  if (!StepAgreesWithItsClass(s)) return;
  MaybeStartLocked(s.signature, &track, s, s.load_class);
}

bool Autotuner::LargerGraphSettledLocked(int node_count) const {
  for (const auto& kv : tracks_) {
    const Track& t = kv.second;
    if (t.node_count > node_count && t.status.state != AutotuneState::kWaiting) return true;
  }
  return false;
}

bool Autotuner::StepAgreesWithItsClass(const StepSample& s) {
  return LoadClassOf(s.in_flight) == s.load_class;
}

bool Autotuner::PauseIfTheLoadChangedLocked(Track* track, const StepSample& s) {
  const LoadClass explored = track->status.load_class;
  if (!IsUnderLoad(explored)) {
    // Latencies say nothing about a layout once requests overlap: pause at
    // once (the tracker follows only after 16 steps).
    if (!s.concurrent) return false;
    PauseLocked(track, "steps began to overlap");
  } else {
    // Under load, a level is left when the tracker says so, not at the
    // first step with a client between requests.
    if (s.load_class == explored) return false;
    PauseLocked(track, std::string("the load moved to ") + LoadClassName(s.load_class));
  }
  return true;
}

void Autotuner::PauseLocked(Track* track, const std::string& why) {
  GRAPHI_DCHECK(!target_.empty() && track->status.state == AutotuneState::kExploring);
  AutotuneStatus& st = track->status;
  const LoadClass load_class = st.load_class;
  const int c = static_cast<int>(load_class);
  Paused paused;
  paused.status = st;
  paused.progress = progress_;
  paused.explored_ns = Now() - exploration_start_ns_;
  track->paused[c] = std::move(paused);
  target_.clear();
  control_->StopExploring();
  // Not decided: due again when the load comes back, from where it stopped.
  // The graph waits for the class it settles in.
  track->explored[c] = false;
  const std::string visits =
      std::to_string(st.visits_done) + "/" + std::to_string(st.visits_planned);
  st = AutotuneStatus();
  st.load_class = load_class;
  st.reason = std::string("exploring ") + LoadClassName(load_class) + " paused after " + visits +
              " visits (" + why + "): it resumes when the load comes back";
}

bool Autotuner::DueForClassExplorationLocked(Track* track, const StepSample& s) {
  const int c = static_cast<int>(s.load_class);
  if (track->explored[c] || s.adopted[c] || !StepAgreesWithItsClass(s)) return false;
  const AutotuneStatus& st = track->status;
  const bool decided =
      st.state == AutotuneState::kAdopted || st.state == AutotuneState::kKeptDefault;
  const bool from_adoption = st.state == AutotuneState::kSkipped && track->skipped_for_adoption;
  if (!decided && !from_adoption) return false;
  track->status = AutotuneStatus();
  // Size the visits from the steps of the load it is under now.
  track->settle_ns = track->recent_ns;
  return true;
}

bool Autotuner::DueForExplorationLocked(Track* track, const StepSample& s, LoadClass load_class) {
  AutotuneStatus& st = track->status;
  auto skip = [&st](const char* reason) {
    st.state = AutotuneState::kSkipped;
    st.reason = reason;
    return false;
  };
  if (const auto& decided = track->decided[static_cast<int>(load_class)]; decided.has_value()) {
    st = *decided;  // back in a class decided here: its decision is in force
    return false;
  }
  if (s.adopted[static_cast<int>(load_class)]) {
    track->skipped_for_adoption = true;
    st.load_class = load_class;
    return skip("started from a cached or tuned setting");
  }
  if (options_.candidates.size() < 2) return skip("only one layout fits this machine");
  if (track->explored[static_cast<int>(load_class)]) return false;  // once per process
  if (track->ok_steps < options_.settle_steps) return false;
  if (control_->ExplicitLayout()) {
    st.reason = "an explicit setting (configure() or the environment) is in force";
    return false;  // stays waiting: explored if the explicit setting goes away
  }
  if (s.end_ns - track->first_start_ns < options_.settle_min_ns) return false;
  if (LargerGraphSettledLocked(track->node_count)) {
    return skip("not the main graph: a larger graph was tuned");
  }
  return true;
}

void Autotuner::PlanVisits(Track* track, LoadClass load_class) const {
  AutotuneStatus& st = track->status;
  // Size the visits from the step time seen while settling (the steps after
  // the first, which includes one-time work).
  std::vector<double> settle(track->settle_ns.begin() + (track->settle_ns.size() > 1 ? 1 : 0),
                             track->settle_ns.end());
  const int64_t step_ns = std::max<int64_t>(1, static_cast<int64_t>(MedianOf(settle)));
  st.reference_step_ns = step_ns;
  st.load_class = load_class;
  st.load_clients =
      IsUnderLoad(load_class)
          ? std::max(2, *std::max_element(track->recent_in_flight.begin(),
                                          track->recent_in_flight.end()))
          : 0;
  bool long_steps;  // under load: long requests
  // The floor of a visit's timed steps (requests) for steps this long.
  const auto min_timed = [this](int64_t ns) {
    return ns < options_.discard_below_ns ? options_.min_timed_per_visit
                                          : options_.min_timed_per_visit_of_long_steps;
  };
  if (st.load_clients > 0) {
    // A request completes every step_ns / clients or so.
    const int clients = st.load_clients;
    const int64_t per_request_ns = std::max<int64_t>(1, step_ns / clients);
    long_steps = per_request_ns >= options_.long_step_ns;
    st.discard_per_visit = clients;
    st.timed_per_visit = static_cast<int>(std::clamp<int64_t>(
        StepsLasting(options_.visit_target_ns, per_request_ns),
        min_timed(per_request_ns) * clients, options_.max_timed_per_visit * clients));
    st.screening_timed_per_visit = options_.screening_timed_per_visit * clients;
  } else {
    long_steps = step_ns >= options_.long_step_ns;
    st.discard_per_visit = step_ns >= options_.discard_below_ns ? 0 : 1;
    st.timed_per_visit =
        long_steps ? 1
                   : static_cast<int>(std::clamp<int64_t>(
                         StepsLasting(options_.visit_target_ns, step_ns), min_timed(step_ns),
                         options_.max_timed_per_visit));
    // Not fewer than the rounds' visits, and not one step for steps shorter
    // than long_step_ns even where the rounds' visits are: a first visit
    // runs on fresh threads and cold caches, and one burst in it must not
    // screen out a setting that would win warm.
    st.screening_timed_per_visit =
        long_steps ? 1 : std::max(st.timed_per_visit, options_.screening_timed_per_visit);
  }
  st.rounds = long_steps ? options_.rounds_long : options_.rounds_short;
  st.runoff_timed_per_visit = long_steps ? 0 : st.timed_per_visit;
  // The default first: round 0 starts on the layout already in force.
  st.order.clear();
  st.order.push_back(options_.default_setting);
  for (const Setting& c : options_.candidates) {
    if (c != options_.default_setting) st.order.push_back(c);
  }
  st.visits_planned = (1 + st.rounds) * static_cast<int>(st.order.size());
  st.visits_done = 0;
  st.screening_medians_ns.clear();
  st.round_medians_ns.clear();
  st.runoff = false;
  st.runoff_medians_ns.clear();
}

void Autotuner::MaybeStartLocked(const std::string& signature, Track* track,
                                 const StepSample& s, LoadClass load_class) {
  if (!DueForExplorationLocked(track, s, load_class)) return;
  const int c = static_cast<int>(load_class);
  track->explored[c] = true;
  track->skipped_for_adoption = false;
  AutotuneStatus& st = track->status;
  int64_t explored_ns = 0;
  std::optional<Paused>& paused = track->paused[c];
  const bool resumed = paused.has_value();
  if (resumed) {
    // Resumed with the visit it was in, which starts over.
    st = std::move(paused->status);
    progress_ = std::move(paused->progress);
    explored_ns = paused->explored_ns;
    paused.reset();
  } else {
    PlanVisits(track, load_class);
    progress_ = Progress();
    progress_.live = st.order;
    progress_.round_order = progress_.live;
  }
  st.state = AutotuneState::kExploring;
  st.reason = st.load_clients > 0
                  ? "exploring under load (" + std::to_string(st.load_clients) +
                        " steps in flight): each layout judged by its throughput"
                  : "exploring";
  if (resumed) st.reason += " (resumed)";
  target_ = signature;
  exploration_start_ns_ = Now() - explored_ns;  // exploration_wall_ns counts both spells
  StartVisitLocked(track);
}

void Autotuner::StartVisitLocked(Track* track) {
  GRAPHI_DCHECK(!target_.empty() && progress_.visit_index < progress_.round_order.size());
  const Setting& setting = progress_.round_order[progress_.visit_index];
  track->status.current = setting;
  control_->Explore(setting);
  visit_start_ns_ = Now();
  visit_mark_ns_ = visit_start_ns_;
  visit_steps_ = 0;
  visit_timed_ns_.clear();
}

void Autotuner::RecordLocked(Track* track, const StepSample& s) {
  GRAPHI_DCHECK(!target_.empty());
  AutotuneStatus& st = track->status;
  if (s.start_ns < visit_start_ns_) {  // began on the previous layout
    if (st.load_clients > 0) {
      // It ran beside this visit's steps until now: time from here.
      visit_mark_ns_ = std::max(visit_mark_ns_, s.end_ns);
      visit_timed_ns_.clear();
    }
    return;
  }
  if (st.load_clients > 0) {
    RecordUnderLoadLocked(track, s);
    return;
  }
  // The time since the visit's previous step ended: this step and what the
  // caller did before it (see the header).
  const int64_t since_previous = s.end_ns - std::min(visit_mark_ns_, s.start_ns);
  visit_mark_ns_ = s.end_ns;
  if (st.current != options_.default_setting) st.cost_ns += since_previous - st.reference_step_ns;
  ++visit_steps_;
  if (visit_steps_ <= st.discard_per_visit) return;
  visit_timed_ns_.push_back(static_cast<double>(since_previous));
  if (static_cast<int>(visit_timed_ns_.size()) >= TimedThisVisitLocked(st)) {
    FinishVisitLocked(track);
  }
}

int Autotuner::TimedThisVisitLocked(const AutotuneStatus& st) const {
  switch (progress_.stage) {
    case Stage::kScreening:
      return st.screening_timed_per_visit;
    case Stage::kRounds:
      return st.timed_per_visit;
    case Stage::kRunoff:
      return st.runoff_timed_per_visit;
  }
  return st.timed_per_visit;
}

void Autotuner::RecordUnderLoadLocked(Track* track, const StepSample& s) {
  AutotuneStatus& st = track->status;
  ++visit_steps_;
  if (visit_steps_ <= st.discard_per_visit) {
    visit_mark_ns_ = std::max(visit_mark_ns_, s.end_ns);
    return;
  }
  visit_timed_ns_.push_back(static_cast<double>(s.end_ns));
  if (static_cast<int>(visit_timed_ns_.size()) < TimedThisVisitLocked(st)) return;
  const double last_end = *std::max_element(visit_timed_ns_.begin(), visit_timed_ns_.end());
  const double per_request =
      std::max(1.0, (last_end - static_cast<double>(visit_mark_ns_)) / visit_timed_ns_.size());
  visit_timed_ns_.assign(1, per_request);  // the visit's one figure
  FinishVisitLocked(track);
}

void Autotuner::FinishVisitLocked(Track* track) {
  AutotuneStatus& st = track->status;
  const double median = MedianOf(visit_timed_ns_);
  switch (progress_.stage) {
    case Stage::kScreening:
      st.screening_medians_ns[st.current] = median;
      break;
    case Stage::kRounds:
      st.round_medians_ns[progress_.round][st.current] = median;
      break;
    case Stage::kRunoff:
      st.runoff_medians_ns[progress_.round][st.current] = median;
      break;
  }
  if (st.current == options_.default_setting && st.load_clients == 0) {
    st.reference_step_ns = static_cast<int64_t>(median);
  }
  ++st.visits_done;
  if (++progress_.visit_index < progress_.round_order.size()) {
    StartVisitLocked(track);
    return;
  }
  switch (progress_.stage) {
    case Stage::kScreening:
      ScreenOutLocked(track);
      progress_.stage = Stage::kRounds;
      NextRoundLocked(track);
      return;
    case Stage::kRounds:
      EliminateLocked(track);
      ++progress_.round;
      NextRoundLocked(track);
      return;
    case Stage::kRunoff:
      ++progress_.round;
      if (progress_.round >= options_.runoff_rounds ||
          RoundsSettled(st.runoff_medians_ns, progress_.live, options_.default_setting,
                        options_.runoff_rounds - progress_.round)) {
        // The runoff's rounds decide (RunoffCandidate, tuning_decision.h).
        DecideLocked(track, DecideSetting(st.runoff_medians_ns, options_.default_setting, st.order,
                                          st.screening_medians_ns));
        return;
      }
      st.runoff_medians_ns.emplace_back();
      StartRoundLocked(track, progress_.round);
      return;
  }
}

void Autotuner::NextRoundLocked(Track* track) {
  AutotuneStatus& st = track->status;
  // Visits left: the remaining rounds of the live settings.
  st.visits_planned =
      st.visits_done + (st.rounds - progress_.round) * static_cast<int>(progress_.live.size());
  if (progress_.round >= st.rounds || progress_.live.size() < 2 ||
      (progress_.round > 0 && RoundsSettled(st.round_medians_ns, progress_.live,
                                            options_.default_setting,
                                            st.rounds - progress_.round))) {
    RunoffOrDecideLocked(track);
    return;
  }
  st.round_medians_ns.emplace_back();
  // Rotated once per round, the screening round counted, so that the
  // setting that ended a round does not open the next one.
  StartRoundLocked(track, progress_.round + 1);
}

void Autotuner::StartRoundLocked(Track* track, int rotation) {
  progress_.round_order = progress_.live;
  std::vector<Setting>& order = progress_.round_order;
  std::rotate(order.begin(), order.begin() + (rotation % order.size()), order.end());
  progress_.visit_index = 0;
  StartVisitLocked(track);
}

void Autotuner::RunoffOrDecideLocked(Track* track) {
  AutotuneStatus& st = track->status;
  TuningDecision rounds = DecideSetting(st.round_medians_ns, options_.default_setting, st.order,
                                        st.screening_medians_ns);
  const bool runoff_possible = st.runoff_timed_per_visit > 0 && options_.runoff_rounds > 0;
  const SettingEvidence* close = runoff_possible ? RunoffCandidate(rounds) : nullptr;
  if (close == nullptr) {  // the rounds decide
    DecideLocked(track, std::move(rounds));
    return;
  }
  st.runoff = true;
  st.runoff_setting = close->setting;
  progress_.live = {options_.default_setting, close->setting};
  progress_.stage = Stage::kRunoff;
  progress_.round = 0;
  st.runoff_medians_ns.assign(1, {});
  st.visits_planned = st.visits_done + options_.runoff_rounds * 2;
  // The close setting opens the runoff; the order rotates every round.
  StartRoundLocked(track, 1);
}

void Autotuner::ScreenOutLocked(Track* track) {
  RemoveSettings(
      SettingsToScreenOut(track->status.screening_medians_ns, progress_.live,
                          options_.default_setting),
      &progress_.live);
}

void Autotuner::EliminateLocked(Track* track) {
  AutotuneStatus& st = track->status;
  std::vector<Setting> drop =
      SettingsToEliminate(st.round_medians_ns, progress_.live, options_.default_setting);
  // Rounds left after this one (progress_.round is the one just finished).
  const int rounds_left = st.rounds - progress_.round - 1;
  for (const Setting& setting : SettingsThatCannotQualify(
           st.round_medians_ns, progress_.live, options_.default_setting, rounds_left)) {
    if (std::find(drop.begin(), drop.end(), setting) == drop.end()) drop.push_back(setting);
  }
  for (const Setting& setting : drop) st.eliminated_after_round[setting] = progress_.round;
  RemoveSettings(drop, &progress_.live);
}

void Autotuner::DecideLocked(Track* track, TuningDecision decision) {
  AutotuneStatus& st = track->status;
  // The rounds may end before the plan did (RoundsSettled): what was
  // planned is what ran.
  st.visits_planned = st.visits_done;
  st.decision = std::move(decision);
  st.chosen = st.decision.chosen;
  st.state = st.decision.adopted ? AutotuneState::kAdopted : AutotuneState::kKeptDefault;
  st.reason = st.decision.reason;
  st.exploration_wall_ns = Now() - exploration_start_ns_;
  track->decided[static_cast<int>(st.load_class)] = st;
  const std::string signature = target_;
  target_.clear();
  // Adopted before exploring stops, so that no step in between resolves to
  // the default alone: the first step after it runs on the setting chosen,
  // and lets go of the others' threads (runtime.h).
  control_->Adopt(signature, st.chosen, st.load_class);
  control_->StopExploring();
  decisions_.push_back(AutotuneResult{signature, st});
  decided_cv_.SignalAll();
}

void Autotuner::AbandonLocked(const std::string& reason) {
  GRAPHI_DCHECK(!target_.empty());
  Track& track = tracks_[target_];
  track.status.state = AutotuneState::kSkipped;
  track.status.reason = "exploration abandoned, default kept: " + reason;
  track.status.exploration_wall_ns = Now() - exploration_start_ns_;
  target_.clear();
  control_->StopExploring();
}

bool Autotuner::Status(const std::string& signature, AutotuneStatus* out) const {
  MutexLock l(&mu_);
  auto it = tracks_.find(signature);
  if (it == tracks_.end()) return false;
  *out = it->second.status;
  // Read from the switch, not kept per step: a graph waits for no other reason
  // while autotuning is off, and says nothing of it once it is back on.
  if (out->state == AutotuneState::kWaiting && !control_->AutotuneEnabled()) {
    out->reason = kAutotuneOffReason;
  }
  return true;
}

std::vector<AutotuneResult> Autotuner::TakeDecisions() {
  MutexLock l(&mu_);
  std::vector<AutotuneResult> out;
  out.swap(decisions_);
  return out;
}

bool Autotuner::WaitForDecisions(int64_t timeout_ns) {
  // The real clock, not options_.clock: this waits for other threads.
  const int64_t deadline = MonotonicNowNs() + timeout_ns;
  MutexLock l(&mu_);
  while (decisions_.empty()) {
    const int64_t left = deadline - MonotonicNowNs();
    if (left <= 0) return false;
    decided_cv_.WaitForNs(&mu_, left);
  }
  return true;
}

void Autotuner::Reset() {
  MutexLock l(&mu_);
  if (!target_.empty()) {
    target_.clear();
    control_->StopExploring();
  }
  tracks_.clear();
  decisions_.clear();
}

}  // namespace graphi
