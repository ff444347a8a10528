// The online autotuner's state machine, driven by a fake clock, fake steps
// and a fake LayoutControl: what it explores, in what order, what it decides,
// and when it gives up.
#include "cc/tuning/autotuner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace graphi {
namespace {

constexpr int64_t kMs = 1000 * 1000;

class FakeControl : public LayoutControl {
 public:
  bool AutotuneEnabled() override { return enabled; }
  bool ExplicitLayout() override { return explicit_layout; }
  void Explore(const Setting& s) override {
    exploring = true;
    current = s;
    visits.push_back(s);
  }
  void StopExploring() override {
    exploring = false;
    current = reference;
  }
  void Adopt(const std::string& signature, const Setting& chosen,
             LoadClass load_class) override {
    adopted[signature][load_class] = chosen;
  }
  // The setting adopted for `signature` in `load_class`; fails the test if none.
  Setting AdoptedFor(LoadClass load_class, const std::string& signature = "main") const {
    auto it = adopted.find(signature);
    if (it == adopted.end() || it->second.count(load_class) == 0) {
      ADD_FAILURE() << "nothing adopted for " << signature << " " << LoadClassName(load_class);
      return {-1, -1};
    }
    return it->second.at(load_class);
  }
  bool HasAdopted(LoadClass load_class, const std::string& signature = "main") const {
    auto it = adopted.find(signature);
    return it != adopted.end() && it->second.count(load_class) > 0;
  }

  static constexpr Setting kDefault{2, 1};
  Setting reference = kDefault;  // the autotuner's default setting
  bool enabled = true;
  bool explicit_layout = false;
  bool exploring = false;
  Setting current = kDefault;
  std::vector<Setting> visits;
  std::map<std::string, std::map<LoadClass, Setting>> adopted;
};

// Runs steps back to back on a fake clock; each step's duration is what
// `step_ms(current layout, step index)` says.
class Harness {
 public:
  Harness() : tuner_(Options(), &control_) {}
  // On `options`, whose default the graph starts on.
  explicit Harness(const AutotuneOptions& options)
      : control_(ControlStartingOn(options.default_setting)), tuner_(options, &control_) {}

  static FakeControl ControlStartingOn(const Setting& setting) {
    FakeControl control;
    control.reference = setting;
    control.current = setting;
    return control;
  }

  // As the process's autotuner: TensorFlow's pools the reference, stock
  // points and team layouts the candidates.
  static AutotuneOptions StockReferenceOptions() {
    AutotuneOptions o = Options();
    o.candidates = {{1, 2}, {2, 1}, StockPointSetting(1, 2), StockPointSetting(2, 1), kStockSetting};
    o.default_setting = kStockSetting;
    return o;
  }

  static AutotuneOptions Options() {
    AutotuneOptions o;
    o.default_setting = FakeControl::kDefault;
    o.candidates = {{1, 1}, {1, 2}, {2, 1}};
    o.clock = [] { return now_ns; };
    o.settle_min_ns = 0;  // settling by time: its own test
    return o;
  }

  template <class F>
  void Run(int steps, F step_ms, const std::string& sig = "main", int nodes = 100) {
    for (int i = 0; i < steps; ++i) {
      StepSample s;
      s.signature = sig;
      s.node_count = nodes;
      s.start_ns = ++now_ns;
      now_ns += static_cast<int64_t>(step_ms(control_.current, step_index_++) * kMs);
      s.end_ns = now_ns;
      Feed(&s);
    }
  }

  // `clients` closed-loop clients keep the graph busy: a request completes
  // every `request_ms(layout)`, and each took `clients` times that.
  template <class F>
  void RunUnderLoad(int completions, int clients, F request_ms) {
    for (int i = 0; i < completions; ++i) {
      const int64_t per_request = static_cast<int64_t>(request_ms(control_.current) * kMs);
      StepSample s;
      s.signature = "main";
      s.node_count = 100;
      now_ns += per_request;
      s.end_ns = now_ns;
      s.start_ns = now_ns - clients * per_request;
      s.concurrent = true;
      s.in_flight = clients;
      Feed(&s);
    }
  }

  // Like Run, but the caller spends `gap_ms(layout)` before each step (its
  // loop, a request's Python side), which a layout can slow down.
  template <class F, class G>
  void RunWithCallerTime(int steps, F step_ms, G gap_ms) {
    for (int i = 0; i < steps; ++i) {
      now_ns += static_cast<int64_t>(gap_ms(control_.current) * kMs);
      Run(1, step_ms);
    }
  }

  // Fills in what the executor's GraphProfile would (the load class, the
  // adoptions) and hands the step to the autotuner.
  void Feed(StepSample* s) {
    s->load_class = (trackers_[s->signature].Note(s->in_flight), trackers_[s->signature].current());
    for (int c = 0; c < kLoadClassCount; ++c) {
      s->adopted[c] = control_.HasAdopted(static_cast<LoadClass>(c), s->signature);
    }
    tuner_.OnStep(*s);
  }

  AutotuneStatus Status(const std::string& sig = "main") {
    AutotuneStatus st;
    EXPECT_TRUE(tuner_.Status(sig, &st));
    return st;
  }

  static inline int64_t now_ns = 0;
  FakeControl control_;
  std::map<std::string, LoadClassTracker> trackers_;
  Autotuner tuner_;
  int step_index_ = 0;
};

double Fixed(const Setting& s, int) {
  if (s == Setting{1, 2}) return 20;  // the fastest
  if (s == Setting{1, 1}) return 40;
  return 25;                                // the default
}

TEST(AutotunerTest, ExploresAfterSettlingAndAdoptsAClearlyFasterSetting) {
  Harness h;
  h.Run(3, Fixed);
  EXPECT_EQ(h.Status().state, AutotuneState::kExploring);
  h.Run(400, Fixed);
  const AutotuneStatus st = h.Status();
  EXPECT_EQ(st.state, AutotuneState::kAdopted);
  EXPECT_EQ(st.chosen, (Setting{1, 2}));
  EXPECT_EQ(h.control_.AdoptedFor(LoadClass::kAlone), (Setting{1, 2}));
  EXPECT_FALSE(h.control_.exploring);
  // 1x2's visits saved more than 1x1's one (screening) visit cost.
  EXPECT_LT(st.cost_ns, 0);
}

TEST(AutotunerTest, KeepsTheDefaultWhenNothingBeatsItByMoreThanItsSpread) {
  Harness h;
  // 1x2 is as fast as the default, give or take 5% noise that alternates.
  h.Run(400, [](const Setting& s, int i) {
    if (s == Setting{1, 1}) return 40.0;
    if (s == Setting{1, 2}) return (i / 7) % 2 ? 23.75 : 26.25;
    return 25.0;
  });
  const AutotuneStatus st = h.Status();
  EXPECT_EQ(st.state, AutotuneState::kKeptDefault);
  EXPECT_EQ(st.chosen, FakeControl::kDefault);
  EXPECT_EQ(h.control_.AdoptedFor(LoadClass::kAlone), FakeControl::kDefault);
}

TEST(AutotunerTest, ANoiseBurstInOneVisitDoesNotChangeTheDecision) {
  Harness h;
  // 1x1 is slower than the default, except in one burst during which the
  // default's own visit ran 3x slow: one round makes 1x1 look fastest.
  int burst_at = -1;
  h.Run(400, [&](const Setting& s, int i) {
    AutotuneStatus st;
    const bool in_round_1 = h.tuner_.Status("main", &st) &&
                            st.state == AutotuneState::kExploring &&
                            st.round_medians_ns.size() == 2;
    if (in_round_1 && s == FakeControl::kDefault) {
      burst_at = i;
      return 75.0;
    }
    return s == Setting{1, 1} ? 30.0 : 25.0;
  });
  ASSERT_GE(burst_at, 0);
  const AutotuneStatus st = h.Status();
  EXPECT_EQ(st.state, AutotuneState::kKeptDefault);
  EXPECT_EQ(st.chosen, FakeControl::kDefault);
}

TEST(AutotunerTest, RotatesTheOrderOfSettingsEveryRound) {
  Harness h;
  // Settling, the screening round (3 visits of 1 + 2 steps), round 0 (3
  // visits of 1 + 1) and the first step of round 1.
  h.Run(3 + 3 * 3 + 3 * 2 + 1, [](const Setting&, int) { return 25.0; });
  ASSERT_EQ(h.control_.visits.size(), 7u);
  // Screening starts on the default, the layout in force; every later round
  // starts on the setting after the one its predecessor started on.
  EXPECT_EQ(h.control_.visits[0], FakeControl::kDefault);
  EXPECT_EQ(h.control_.visits[3], h.control_.visits[1]);
  EXPECT_EQ(h.control_.visits[6], h.control_.visits[2]);
}

TEST(AutotunerTest, ScreensOutASettingFarSlowerInItsFirstVisit) {
  Harness h;
  h.Run(400, Fixed);  // 1x1: 40 ms against the default's 25
  const AutotuneStatus st = h.Status();
  EXPECT_EQ(std::count(h.control_.visits.begin(), h.control_.visits.end(), Setting{1, 1}), 1);
  EXPECT_NEAR(st.screening_medians_ns.at({1, 1}), 40.0 * kMs, 0.01 * kMs);
  EXPECT_EQ(st.eliminated_after_round.count({1, 1}), 0u);
  for (const auto& round : st.round_medians_ns) EXPECT_EQ(round.count({1, 1}), 0u);
  ASSERT_EQ(st.decision.evidence.size(), 3u);
  EXPECT_TRUE(st.decision.evidence[1].screened_out);
  EXPECT_EQ(st.decision.evidence[1].setting, (Setting{1, 1}));
}

TEST(AutotunerTest, EliminatesASettingThatIsMuchSlowerInTwoRounds) {
  Harness h;
  // 1x1 is 1.2x the default: it passes screening, not two rounds.
  h.Run(400, [](const Setting& s, int i) { return s == Setting{1, 1} ? 30.0 : Fixed(s, i); });
  const AutotuneStatus st = h.Status();
  ASSERT_EQ(st.eliminated_after_round.count({1, 1}), 1u);
  EXPECT_EQ(st.eliminated_after_round.at({1, 1}), 1);  // after rounds 0 and 1
  EXPECT_EQ(std::count(h.control_.visits.begin(), h.control_.visits.end(), Setting{1, 1}), 3);
}

TEST(AutotunerTest, ASettingFarSlowerThanOneThatBeatsTheDefaultStopsBeingTimed) {
  Harness h;
  // 1x1 beats the default (0.8x), 1x2 beats it by more: 1x1 is 1.33x 1x2.
  h.Run(400, [](const Setting& s, int) {
    if (s == Setting{1, 1}) return 20.0;
    if (s == Setting{1, 2}) return 15.0;
    return 25.0;
  });
  const AutotuneStatus st = h.Status();
  EXPECT_EQ(st.chosen, (Setting{1, 2}));
  ASSERT_EQ(st.eliminated_after_round.count({1, 1}), 1u);
  // After rounds 0-2: 1x2 qualifies from its third round on.
  EXPECT_EQ(st.eliminated_after_round.at({1, 1}), 2);
  // Its screening visit and three rounds'.
  EXPECT_EQ(std::count(h.control_.visits.begin(), h.control_.visits.end(), Setting{1, 1}), 4);
}

TEST(AutotunerTest, ASettingSlowOnlyInItsColdFirstVisitIsAdopted) {
  Harness h;
  // 1x2 is 0.8x the default once warm, 1.25x in its first visit.
  bool warm = false;
  h.Run(400, [&](const Setting& s, int) {
    AutotuneStatus st;
    if (s == Setting{1, 2} && h.tuner_.Status("main", &st) && !st.round_medians_ns.empty()) {
      warm = true;
    }
    if (s == Setting{1, 2}) return warm ? 20.0 : 31.25;
    return 25.0;
  });
  const AutotuneStatus st = h.Status();
  EXPECT_EQ(st.state, AutotuneState::kAdopted);
  EXPECT_EQ(st.chosen, (Setting{1, 2}));
  EXPECT_NEAR(st.screening_medians_ns.at({1, 2}), 31.25 * kMs, 0.01 * kMs);
}

// How many visits `setting` has had so far (this one included).
int VisitsOf(const Harness& h, const Setting& setting) {
  return static_cast<int>(std::count(h.control_.visits.begin(), h.control_.visits.end(), setting));
}

TEST(AutotunerTest, WhenEveryOtherSettingLooksFarSlowerTheClosestIsStillTimedInRounds) {
  AutotuneOptions options = Harness::Options();
  options.candidates = {{1, 1}, {1, 2}, FakeControl::kDefault};
  Harness h(options);
  // 1x1 and 1x2 are 1.6x and 1.4x the default in every visit.
  h.Run(200, [](const Setting& s, int) {
    return s == Setting{1, 1} ? 40.0 : s == Setting{1, 2} ? 35.0 : 25.0;
  });
  const AutotuneStatus st = h.Status();
  EXPECT_EQ(st.state, AutotuneState::kKeptDefault);
  // 1x2, the closest, was timed in two rounds and then eliminated; 1x1 not.
  EXPECT_EQ(VisitsOf(h, Setting{1, 2}), 3);
  EXPECT_EQ(VisitsOf(h, Setting{1, 1}), 1);
  ASSERT_EQ(st.eliminated_after_round.count({1, 2}), 1u);
  EXPECT_TRUE(st.decision.evidence[1].screened_out);   // 1x1
  EXPECT_FALSE(st.decision.evidence[2].screened_out);  // 1x2
}

TEST(AutotunerTest, ASlowdownAfterTheDefaultsScreeningVisitScreensNothingOut) {
  AutotuneOptions options = Harness::Options();
  options.candidates = {{1, 2}, FakeControl::kDefault};
  Harness h(options);
  // 1x2 is 0.8x the default, but everything runs twice as slow from the end
  // of the default's first screening visit until the rounds (a neighbour on
  // the VM): 1x2's screening visit looks 1.6x the default's.
  h.Run(200, [&h](const Setting& s, int) {
    AutotuneStatus st;
    const bool slowed = h.tuner_.Status("main", &st) && st.state == AutotuneState::kExploring &&
                        st.round_medians_ns.empty() && st.visits_done >= 1;
    return (s == Setting{1, 2} ? 20.0 : 25.0) * (slowed ? 2.0 : 1.0);
  });
  const AutotuneStatus st = h.Status();
  EXPECT_EQ(st.chosen, (Setting{1, 2})) << st.reason;
  EXPECT_NEAR(st.screening_medians_ns.at({1, 2}), 40.0 * kMs, 0.01 * kMs);  // 1.6x the default
  EXPECT_FALSE(st.round_medians_ns.empty());
}

// 1x2 is 0.96x the default; in the rounds its visits alternate between
// 0.91x and 1.01x (noise), so it is close (median 0.96) but faster in only
// half the rounds; in the runoff its n-th visit runs `runoff_ms(n)`. 1x1 is
// screened out.
template <class F>
void RunCloseCall(Harness* h, F runoff_ms, int steps = 600) {
  h->Run(steps, [&](const Setting& s, int) {
    if (s == Setting{1, 1}) return 40.0;
    if (s != Setting{1, 2}) return 25.0;
    AutotuneStatus st;
    const bool runoff = h->tuner_.Status("main", &st) && st.runoff;
    const int visit = VisitsOf(*h, s);
    if (runoff) return runoff_ms(visit);
    return visit % 2 == 0 ? 22.75 : 25.25;
  });
}

TEST(AutotunerTest, ACloseSettingThatHoldsInTheRunoffIsAdopted) {
  Harness h;
  RunCloseCall(&h, [](int) { return 24.0; });
  const AutotuneStatus st = h.Status();
  EXPECT_TRUE(st.runoff);
  EXPECT_EQ(st.runoff_setting, (Setting{1, 2}));
  // Faster in 6 of 6 runoff rounds: 6 of the 8 planned is enough whatever
  // the rest show, so the runoff ends there.
  EXPECT_EQ(st.runoff_medians_ns.size(), 6u);
  EXPECT_EQ(st.runoff_timed_per_visit, st.timed_per_visit);
  EXPECT_EQ(st.state, AutotuneState::kAdopted);
  EXPECT_EQ(st.chosen, (Setting{1, 2}));
  // The runoff's rounds decided: 0.96 in each.
  EXPECT_EQ(st.decision.evidence[2].ratios.size(), 6u);
  EXPECT_NEAR(st.decision.evidence[2].ratio_median, 0.96, 1e-3);
}

TEST(AutotunerTest, ACloseSettingThatDoesNotHoldInTheRunoffKeepsTheDefault) {
  Harness h;
  // Over the runoff's four rounds: 0.91x and 1.01x twice each, within the spread.
  RunCloseCall(&h, [](int visit) { return visit % 2 ? 22.75 : 25.25; });
  const AutotuneStatus st = h.Status();
  EXPECT_TRUE(st.runoff);
  EXPECT_EQ(st.state, AutotuneState::kKeptDefault);
  EXPECT_EQ(h.control_.AdoptedFor(LoadClass::kAlone), FakeControl::kDefault);
}

TEST(AutotunerTest, ARunoffAdoptsACloseSettingThatABurstSlowedInOneOfItsRounds) {
  Harness h;
  // 0.96x in the runoff's visits of 1x2 but its second, which runs 1.2x (a
  // neighbour on the VM): one lost round, however slow, of the seven the
  // runoff then needs to settle.
  RunCloseCall(&h, [&h](int) {
    AutotuneStatus st;
    h.tuner_.Status("main", &st);
    return st.runoff_medians_ns.size() == 2 ? 30.0 : 24.0;
  });
  const AutotuneStatus st = h.Status();
  EXPECT_TRUE(st.runoff);
  EXPECT_EQ(st.state, AutotuneState::kAdopted) << st.reason;
  EXPECT_EQ(st.chosen, (Setting{1, 2}));
  EXPECT_NE(st.reason.find("faster in 6 of 7 rounds, 6 needed"), std::string::npos) << st.reason;
}

TEST(AutotunerTest, ExploringATwentyMillisecondStepEndsWithinTwoSecondsEvenWithARunoff) {
  // Two cores, an LSTM-like step: the intra-op-only settings are screened
  // out, 2x1 ties with stock, and stock:2x1 is a close call (0.91x and 1.01x
  // in turn) that the runoff settles at 0.96x.
  const Setting stock_2x1 = StockPointSetting(2, 1);
  Harness h(Harness::StockReferenceOptions());
  h.Run(600, [&](const Setting& s, int) {
    if (s == Setting{1, 2} || s == StockPointSetting(1, 2)) return 36.0;
    if (s != stock_2x1) return 20.0;
    AutotuneStatus st;
    const int visit = VisitsOf(h, s);
    if (h.tuner_.Status("main", &st) && st.runoff) return 19.2;
    return visit % 2 == 0 ? 18.2 : 20.2;
  });
  const AutotuneStatus st = h.Status();
  EXPECT_TRUE(st.runoff);
  EXPECT_EQ(st.chosen, stock_2x1);
  // 1.85 s: 10 rounds (then stock:2x1 cannot qualify) and 6 of the runoff;
  // 1.73 s under the rule before 2026-12-07, 2.35 s with 100 ms visits.
  EXPECT_LT(st.exploration_wall_ns, 2000 * kMs);
}

TEST(AutotunerTest, NoRunoffWhenNoSettingCameClose) {
  Harness h;
  h.Run(600, [](const Setting& s, int) { return s == Setting{1, 1} ? 40.0 : 25.0; });
  const AutotuneStatus st = h.Status();
  EXPECT_EQ(st.state, AutotuneState::kKeptDefault);
  EXPECT_FALSE(st.runoff);
  EXPECT_TRUE(st.runoff_medians_ns.empty());
}

TEST(AutotunerTest, NoRunoffForLongSteps) {
  Harness h;
  h.Run(60, [&h](const Setting& s, int) {
    if (s != Setting{1, 2}) return 1300.0;
    // Rounds from 0 (its visit 2): 0.90x, 1.02x, 0.90x, 1.02x: close, but
    // after two lost rounds it cannot win the 4 of 5 the sign test needs.
    return VisitsOf(h, s) % 2 == 0 ? 1170.0 : 1326.0;
  });
  const AutotuneStatus st = h.Status();
  EXPECT_EQ(st.state, AutotuneState::kKeptDefault) << st.reason;
  ASSERT_EQ(st.decision.evidence.size(), 3u);
  EXPECT_LT(st.decision.evidence[2].ratio_median, kRunoffBelowRatio);  // close: a runoff if short
  EXPECT_EQ(st.runoff_timed_per_visit, 0);
  EXPECT_FALSE(st.runoff);
}

TEST(AutotunerTest, ALongStepsSettingThatLosesOneRoundIsStillAdopted) {
  // One-step visits of a ~1.3 s step: one slow visit (a round lost at
  // 1.01x) among five no longer vetoes a setting 15% faster.
  Harness h;
  h.Run(60, [&h](const Setting& s, int) {
    if (s != Setting{1, 2}) return 1300.0;
    return VisitsOf(h, s) == 2 ? 1313.0 : 1105.0;  // its visit 2: round 0
  });
  const AutotuneStatus st = h.Status();
  EXPECT_EQ(st.state, AutotuneState::kAdopted) << st.reason;
  EXPECT_EQ(h.control_.AdoptedFor(LoadClass::kAlone), (Setting{1, 2}));
}

TEST(AutotunerTest, SizesVisitsFromTheStepTime) {
  Harness small;
  small.Run(3, [](const Setting&, int) { return 25.0; });
  EXPECT_EQ(small.Status().timed_per_visit, 1);  // the fewest 25 ms steps lasting 20 ms
  EXPECT_EQ(small.Status().discard_per_visit, 1);
  EXPECT_EQ(small.Status().screening_timed_per_visit, 2);  // a cold visit: never one step
  EXPECT_EQ(small.Status().rounds, 12);  // at most, after the screening round
  Harness tiny;  // an LSTM served one request at a time
  tiny.Run(3, [](const Setting&, int) { return 1.5; });
  EXPECT_EQ(tiny.Status().timed_per_visit, 14);
  EXPECT_EQ(tiny.Status().screening_timed_per_visit, 14);
  Harness tinier;
  tinier.Run(3, [](const Setting&, int) { return 0.25; });
  EXPECT_EQ(tinier.Status().timed_per_visit, 64);  // 20 ms would be 80 steps
  Harness medium;
  medium.Run(3, [](const Setting&, int) { return 150.0; });
  EXPECT_EQ(medium.Status().timed_per_visit, 1);
  EXPECT_EQ(medium.Status().discard_per_visit, 0);
  EXPECT_EQ(medium.Status().rounds, 12);
  Harness large;
  large.Run(3, [](const Setting&, int) { return 1300.0; });
  EXPECT_EQ(large.Status().timed_per_visit, 1);
  EXPECT_EQ(large.Status().discard_per_visit, 0);
  EXPECT_EQ(large.Status().screening_timed_per_visit, 1);
  EXPECT_EQ(large.Status().rounds, 5);
}

TEST(AutotunerTest, ASmallModelSpendsAFewSecondsAtMost) {
  Harness h;
  const int64_t start = Harness::now_ns;
  h.Run(1000, Fixed);
  const AutotuneStatus st = h.Status();
  ASSERT_NE(st.state, AutotuneState::kExploring);
  EXPECT_LT(st.exploration_wall_ns, 5000 * kMs);
  EXPECT_LT(st.cost_ns, 2000 * kMs);
  (void)start;
}

TEST(AutotunerTest, DoesNothingWhenSwitchedOff) {
  Harness h;
  h.control_.enabled = false;
  h.Run(100, Fixed);
  EXPECT_TRUE(h.control_.visits.empty());
  EXPECT_EQ(h.Status().state, AutotuneState::kWaiting);
}

TEST(AutotunerTest, AGraphWaitingWhileSwitchedOffSaysWhy) {
  Harness h;
  h.control_.enabled = false;
  h.Run(100, Fixed);
  EXPECT_EQ(h.Status().state, AutotuneState::kWaiting);
  EXPECT_NE(h.Status().reason.find("autotuning is off"), std::string::npos) << h.Status().reason;
  // Switched back on, it no longer says so: it settles, then it is explored.
  h.control_.enabled = true;
  h.Run(1, Fixed);
  EXPECT_EQ(h.Status().reason.find("autotuning is off"), std::string::npos) << h.Status().reason;
  h.Run(100, Fixed);
  EXPECT_FALSE(h.control_.visits.empty());
}

TEST(AutotunerTest, SwitchingOffWhileExploringGoesBackToTheDefault) {
  Harness h;
  h.Run(10, Fixed);
  ASSERT_TRUE(h.control_.exploring);
  h.control_.enabled = false;
  h.Run(1, Fixed);
  EXPECT_FALSE(h.control_.exploring);
  EXPECT_EQ(h.Status().state, AutotuneState::kSkipped);
  EXPECT_TRUE(h.control_.adopted.empty());
}

TEST(AutotunerTest, AnExplicitSettingWins) {
  Harness h;
  h.control_.explicit_layout = true;
  h.Run(100, Fixed);
  EXPECT_TRUE(h.control_.visits.empty());
  // Once it is gone, the graph is explored.
  h.control_.explicit_layout = false;
  h.Run(1, Fixed);
  EXPECT_EQ(h.Status().state, AutotuneState::kExploring);
  h.control_.explicit_layout = true;
  h.Run(1, Fixed);
  EXPECT_EQ(h.Status().state, AutotuneState::kSkipped);
  EXPECT_FALSE(h.control_.exploring);
}

// Stock 25 ms, its 2x1 point 20, everything else 30.
double StockPointFastest(const Setting& s, int) {
  if (s == kStockSetting) return 25;
  if (s == StockPointSetting(2, 1)) return 20;
  return 30;
}

TEST(AutotunerTest, AStockPointThatBeatsTensorFlowsPoolsByMoreThanItsSpreadIsAdopted) {
  Harness h(Harness::StockReferenceOptions());
  h.Run(600, StockPointFastest);
  const AutotuneStatus st = h.Status();
  EXPECT_EQ(st.state, AutotuneState::kAdopted);
  EXPECT_EQ(st.chosen, StockPointSetting(2, 1));
  EXPECT_EQ(h.control_.AdoptedFor(LoadClass::kAlone), StockPointSetting(2, 1));
  EXPECT_NE(std::find(h.control_.visits.begin(), h.control_.visits.end(), StockPointSetting(1, 2)),
            h.control_.visits.end());
}

TEST(AutotunerTest, AStockPointWithinItsSpreadOfTensorFlowsPoolsKeepsThem) {
  Harness h(Harness::StockReferenceOptions());
  // stock:2x1 alternates 5% either side of stock; the rest are slower.
  h.Run(600, [](const Setting& s, int i) {
    if (s == kStockSetting) return 25.0;
    if (s == StockPointSetting(2, 1)) return (i / 7) % 2 ? 23.75 : 26.25;
    return 30.0;
  });
  const AutotuneStatus st = h.Status();
  EXPECT_EQ(st.state, AutotuneState::kKeptDefault);
  EXPECT_EQ(h.control_.AdoptedFor(LoadClass::kAlone), kStockSetting);
}

TEST(AutotunerTest, AnExplicitSettingWinsOverStockPointsToo) {
  Harness h(Harness::StockReferenceOptions());
  h.control_.explicit_layout = true;
  h.Run(200, StockPointFastest);
  EXPECT_TRUE(h.control_.visits.empty());
  EXPECT_FALSE(h.control_.HasAdopted(LoadClass::kAlone));
}

TEST(AutotunerTest, AGraphWithACachedSettingIsNotExplored) {
  Harness h;
  h.control_.adopted["main"][LoadClass::kAlone] = {1, 1};
  h.Run(100, Fixed);
  EXPECT_TRUE(h.control_.visits.empty());
  EXPECT_EQ(h.Status().state, AutotuneState::kSkipped);
}

TEST(AutotunerTest, StepsThatBeginToOverlapRestartExplorationUnderLoad) {
  Harness h;
  h.Run(10, Fixed);
  ASSERT_TRUE(h.control_.exploring);
  StepSample s;
  s.signature = "main";
  s.node_count = 100;
  s.start_ns = ++Harness::now_ns;
  s.end_ns = (Harness::now_ns += 25 * kMs);
  s.concurrent = true;
  s.in_flight = 2;
  h.tuner_.OnStep(s);
  EXPECT_FALSE(h.control_.exploring);  // back on the default, nothing adopted
  EXPECT_EQ(h.Status().state, AutotuneState::kWaiting);
  EXPECT_TRUE(h.control_.adopted.empty());
  Harness::now_ns += 1000 * kMs;
  h.RunUnderLoad(2000, 4, [](const Setting& l) { return l == Setting{1, 1} ? 2.0 : 2.5; });
  const AutotuneStatus st = h.Status();
  EXPECT_GE(st.load_clients, 2);
  EXPECT_EQ(st.state, AutotuneState::kAdopted);
  EXPECT_EQ(st.chosen, (Setting{1, 1}));
}

TEST(AutotunerTest, AGraphOfSmallStepsIsExploredOnlyAfterItsFirstHalfSecond) {
  AutotuneOptions options = Harness::Options();
  options.settle_min_ns = 500 * kMs;
  FakeControl control;
  Autotuner tuner(options, &control);
  AutotuneStatus st;
  for (int i = 0; i < 600; ++i) {  // 1 ms steps
    StepSample s;
    s.signature = "main";
    s.node_count = 100;
    s.start_ns = ++Harness::now_ns;
    s.end_ns = (Harness::now_ns += kMs);
    tuner.OnStep(s);
    ASSERT_TRUE(tuner.Status("main", &st));
    if (i < 490) ASSERT_EQ(st.state, AutotuneState::kWaiting) << "step " << i;
  }
  EXPECT_EQ(st.state, AutotuneState::kExploring);
}

TEST(AutotunerTest, OneStepAtATimeALayoutThatSlowsTheCallerDownLoses) {
  Harness h;
  // Every layout's steps take 25 ms, but on the default the caller's own
  // 10 ms between steps take 20 (threads spinning on its core).
  h.RunWithCallerTime(
      400, [](const Setting&, int) { return 25.0; },
      [](const Setting& l) { return l == FakeControl::kDefault ? 20.0 : 10.0; });
  const AutotuneStatus st = h.Status();
  EXPECT_EQ(st.state, AutotuneState::kAdopted);
  EXPECT_NE(st.chosen, FakeControl::kDefault);
  for (const auto& round : st.round_medians_ns) {
    for (const auto& [setting, ns] : round) EXPECT_GE(ns, 35.0 * kMs) << setting.Label();
  }
}

// 1x2 wins one step at a time (Fixed), but is the slowest under load.
double UnderLoadOneByTwoIsSlow(const Setting& l) {
  return l == Setting{1, 2} ? 5.0 : 2.5;
}

TEST(AutotunerTest, AGraphDecidedOneStepAtATimeIsExploredUnderLoadWhenItsStepsKeepOverlapping) {
  Harness h;
  h.Run(400, Fixed);
  ASSERT_EQ(h.control_.AdoptedFor(LoadClass::kAlone), (Setting{1, 2}));
  h.RunUnderLoad(3000, 4, UnderLoadOneByTwoIsSlow);
  const AutotuneStatus st = h.Status();
  EXPECT_EQ(st.load_clients, 4);
  EXPECT_EQ(st.load_class, LoadClass::kUnderLoad4);
  EXPECT_EQ(st.state, AutotuneState::kKeptDefault);
  EXPECT_EQ(h.control_.AdoptedFor(LoadClass::kUnderLoad4), FakeControl::kDefault);
  EXPECT_EQ(h.tuner_.TakeDecisions().size(), 2u);  // one per load class, both cached
}

TEST(AutotunerTest, DecidingUnderLoadKeepsTheSettingForOneStepAtATime) {
  Harness h;
  h.Run(400, Fixed);
  h.RunUnderLoad(3000, 4, UnderLoadOneByTwoIsSlow);
  ASSERT_EQ(h.Status().load_class, LoadClass::kUnderLoad4);
  EXPECT_EQ(h.control_.AdoptedFor(LoadClass::kAlone), (Setting{1, 2}));
}

TEST(AutotunerTest, EachLoadClassIsExploredOnlyOnce) {
  Harness h;
  h.Run(400, Fixed);
  h.RunUnderLoad(3000, 4, UnderLoadOneByTwoIsSlow);
  const size_t visits = h.control_.visits.size();
  h.Run(400, Fixed);
  h.RunUnderLoad(3000, 4, UnderLoadOneByTwoIsSlow);
  EXPECT_EQ(h.control_.visits.size(), visits);
}

TEST(AutotunerTest, AFewOverlappingStepsDoNotStartAnotherExploration) {
  Harness h;
  h.Run(400, Fixed);
  const size_t visits = h.control_.visits.size();
  for (int i = 0; i < 20; ++i) {
    h.RunUnderLoad(10, 2, UnderLoadOneByTwoIsSlow);  // an occasional burst of overlap
    h.Run(5, Fixed);
  }
  EXPECT_EQ(h.control_.visits.size(), visits);
  EXPECT_FALSE(h.control_.HasAdopted(LoadClass::kUnderLoad2));
}

TEST(AutotunerTest, AGraphStartedFromACachedSettingIsExploredWhenItsStepsKeepOverlapping) {
  Harness h;
  h.control_.adopted["main"][LoadClass::kAlone] = {1, 2};  // cached, one step at a time
  h.Run(100, Fixed);
  ASSERT_EQ(h.Status().state, AutotuneState::kSkipped);
  h.RunUnderLoad(3000, 4, UnderLoadOneByTwoIsSlow);
  const AutotuneStatus st = h.Status();
  EXPECT_EQ(st.load_clients, 4);
  EXPECT_EQ(st.state, AutotuneState::kKeptDefault);
  EXPECT_EQ(h.control_.AdoptedFor(LoadClass::kUnderLoad4), FakeControl::kDefault);
  EXPECT_EQ(h.control_.AdoptedFor(LoadClass::kAlone), (Setting{1, 2}));
}

TEST(AutotunerTest, AGraphWithCachedSettingsForBothLoadsIsNeverExplored) {
  Harness h;
  h.control_.adopted["main"][LoadClass::kAlone] = {1, 2};
  h.control_.adopted["main"][LoadClass::kUnderLoad4] = {1, 1};
  h.Run(100, Fixed);
  h.RunUnderLoad(3000, 4, UnderLoadOneByTwoIsSlow);
  h.Run(100, Fixed);
  EXPECT_TRUE(h.control_.visits.empty());
}

TEST(AutotunerTest, AGraphStartedUnderLoadIsExploredOneStepAtATimeWhenTheLoadGoes) {
  Harness h;
  Harness::now_ns += 1000 * kMs;  // room for the first requests' start times
  h.RunUnderLoad(3000, 4, UnderLoadOneByTwoIsSlow);
  ASSERT_EQ(h.Status().load_class, LoadClass::kUnderLoad4);
  ASSERT_EQ(h.control_.AdoptedFor(LoadClass::kUnderLoad4), FakeControl::kDefault);
  h.Run(600, Fixed);
  const AutotuneStatus st = h.Status();
  EXPECT_EQ(st.load_class, LoadClass::kAlone);
  EXPECT_EQ(st.load_clients, 0);
  EXPECT_EQ(st.state, AutotuneState::kAdopted);
  EXPECT_EQ(h.control_.AdoptedFor(LoadClass::kAlone), (Setting{1, 2}));
  EXPECT_EQ(h.control_.AdoptedFor(LoadClass::kUnderLoad4), FakeControl::kDefault);
}

// The default and 1x2 tie under 4 clients; under 8, 1x1 serves the most.
double EightClientsFavourOneByOne(const Setting& l) {
  return l == Setting{1, 1} ? 2.0 : 2.5;
}

TEST(AutotunerTest, AGraphDecidedUnderFourClientsIsExploredAgainUnderEight) {
  Harness h;
  Harness::now_ns += 1000 * kMs;
  h.RunUnderLoad(3000, 4, [](const Setting&) { return 2.5; });
  ASSERT_EQ(h.control_.AdoptedFor(LoadClass::kUnderLoad4), FakeControl::kDefault);
  h.RunUnderLoad(3000, 8, EightClientsFavourOneByOne);
  const AutotuneStatus st = h.Status();
  EXPECT_EQ(st.load_class, LoadClass::kUnderLoad8);
  EXPECT_EQ(st.load_clients, 8);
  EXPECT_EQ(st.state, AutotuneState::kAdopted);
  EXPECT_EQ(h.control_.AdoptedFor(LoadClass::kUnderLoad8), (Setting{1, 1}));
  EXPECT_EQ(h.control_.AdoptedFor(LoadClass::kUnderLoad4), FakeControl::kDefault);
  EXPECT_EQ(h.tuner_.TakeDecisions().size(), 2u);  // one per level, both cached
}

TEST(AutotunerTest, AGraphWhoseStepsBeginToOverlapWaitsForItsLevelBeforeExploring) {
  Harness h;
  Harness::now_ns += 1000 * kMs;
  // Settled, but the class still says alone while the steps overlap.
  h.RunUnderLoad(LoadClassTracker::kDefaultStepsToSwitch - 1, 4, EightClientsFavourOneByOne);
  EXPECT_TRUE(h.control_.visits.empty());
  EXPECT_EQ(h.Status().state, AutotuneState::kWaiting);
  h.RunUnderLoad(2, 4, EightClientsFavourOneByOne);
  const AutotuneStatus st = h.Status();
  EXPECT_EQ(st.state, AutotuneState::kExploring);
  EXPECT_EQ(st.load_class, LoadClass::kUnderLoad4);
}

TEST(AutotunerTest, AnExplorationWhoseLoadChangesLevelStartsOverAtTheNewLevel) {
  Harness h;
  Harness::now_ns += 1000 * kMs;
  h.RunUnderLoad(40, 4, [](const Setting&) { return 2.5; });
  ASSERT_EQ(h.Status().state, AutotuneState::kExploring);
  ASSERT_EQ(h.Status().load_class, LoadClass::kUnderLoad4);
  h.RunUnderLoad(3000, 8, EightClientsFavourOneByOne);
  const AutotuneStatus st = h.Status();
  EXPECT_EQ(st.load_class, LoadClass::kUnderLoad8);
  EXPECT_EQ(st.state, AutotuneState::kAdopted);
  EXPECT_EQ(h.control_.AdoptedFor(LoadClass::kUnderLoad8), (Setting{1, 1}));
  EXPECT_FALSE(h.control_.HasAdopted(LoadClass::kUnderLoad4));  // never decided
  // Back at 4 clients, the level left undecided is explored.
  h.RunUnderLoad(3000, 4, [](const Setting&) { return 2.5; });
  EXPECT_EQ(h.control_.AdoptedFor(LoadClass::kUnderLoad4), FakeControl::kDefault);
}

TEST(AutotunerTest, AnExplorationTheLoadLeftResumesWithTheVisitItWasInWhenTheLoadComesBack) {
  Harness h;
  Harness::now_ns += 1000 * kMs;
  h.RunUnderLoad(60, 4, [](const Setting&) { return 2.5; });
  // 8 clients: the exploration of 4 goes on until the class follows the load.
  AutotuneStatus before = h.Status();
  while (h.Status().state == AutotuneState::kExploring) {
    before = h.Status();
    h.RunUnderLoad(1, 8, EightClientsFavourOneByOne);
  }
  ASSERT_EQ(before.load_class, LoadClass::kUnderLoad4);
  ASSERT_GT(before.visits_done, 0);
  EXPECT_EQ(h.Status().state, AutotuneState::kWaiting);
  EXPECT_NE(h.Status().reason.find("paused"), std::string::npos) << h.Status().reason;
  h.RunUnderLoad(3000, 8, EightClientsFavourOneByOne);
  ASSERT_EQ(h.control_.AdoptedFor(LoadClass::kUnderLoad8), (Setting{1, 1}));
  // Back at 4 clients: once the class holds again, the same visit, of the
  // same plan, with the visits done before counted.
  h.RunUnderLoad(LoadClassTracker::kDefaultStepsToSwitch + 1, 4,
                 [](const Setting&) { return 2.5; });
  const AutotuneStatus resumed = h.Status();
  EXPECT_EQ(resumed.state, AutotuneState::kExploring);
  EXPECT_EQ(resumed.load_class, LoadClass::kUnderLoad4);
  EXPECT_EQ(resumed.visits_done, before.visits_done);
  EXPECT_EQ(resumed.visits_planned, before.visits_planned);
  EXPECT_EQ(resumed.current, before.current);
  EXPECT_EQ(resumed.screening_medians_ns, before.screening_medians_ns);
  h.RunUnderLoad(3000, 4, [](const Setting&) { return 2.5; });
  const AutotuneStatus decided = h.Status();
  EXPECT_EQ(decided.state, AutotuneState::kKeptDefault);
  EXPECT_EQ(decided.load_class, LoadClass::kUnderLoad4);
  // Every visit counted gave one median: none of the first spell's was
  // counted twice.
  size_t medians = decided.screening_medians_ns.size();
  for (const auto& round : decided.round_medians_ns) medians += round.size();
  for (const auto& round : decided.runoff_medians_ns) medians += round.size();
  EXPECT_EQ(static_cast<size_t>(decided.visits_done), medians);
  EXPECT_EQ(decided.visits_done, decided.visits_planned);
}

TEST(AutotunerTest, ALoadThatMovesMoreOftenThanAnExplorationLastsStillGetsItsClassDecided) {
  Harness h;
  Harness::now_ns += 1000 * kMs;
  // Spells of 4 clients too short for a whole exploration, between spells
  // of 8 (decided in the first).
  for (int spell = 0; spell < 20 && !h.control_.HasAdopted(LoadClass::kUnderLoad4); ++spell) {
    h.RunUnderLoad(60, 4, EightClientsFavourOneByOne);
    h.RunUnderLoad(spell == 0 ? 3000 : 60, 8, EightClientsFavourOneByOne);
  }
  EXPECT_EQ(h.control_.AdoptedFor(LoadClass::kUnderLoad4), (Setting{1, 1}));
  EXPECT_EQ(h.control_.AdoptedFor(LoadClass::kUnderLoad8), (Setting{1, 1}));
  EXPECT_EQ(h.tuner_.TakeDecisions().size(), 2u);  // each level decided once
}

TEST(AutotunerTest, AGraphBackInAClassDecidedInThisProcessShowsThatDecision) {
  Harness h;
  h.Run(400, Fixed);
  const AutotuneStatus alone = h.Status();
  ASSERT_EQ(alone.state, AutotuneState::kAdopted);
  ASSERT_EQ(alone.chosen, (Setting{1, 2}));
  h.RunUnderLoad(60, 4, UnderLoadOneByTwoIsSlow);
  ASSERT_EQ(h.Status().state, AutotuneState::kExploring);  // paused by the next steps
  h.Run(100, Fixed);
  const AutotuneStatus back = h.Status();
  EXPECT_EQ(back.state, AutotuneState::kAdopted);
  EXPECT_EQ(back.load_class, LoadClass::kAlone);
  EXPECT_EQ(back.chosen, (Setting{1, 2}));
  EXPECT_EQ(back.reason, alone.reason);
}

TEST(AutotunerTest, ASettingFromTuneIsNotExploredAgainOneStepAtATime) {
  Harness h;
  h.control_.adopted["main"][LoadClass::kAlone] = {1, 2};  // tune() measures one step at a time
  h.Run(400, Fixed);
  EXPECT_TRUE(h.control_.visits.empty());
  EXPECT_EQ(h.control_.AdoptedFor(LoadClass::kAlone), (Setting{1, 2}));
}

TEST(AutotunerTest, UnderLoadAdoptsTheLayoutWithTheHighestThroughput) {
  Harness h;
  h.Harness::now_ns += 1000 * kMs;  // room for the first requests' start times
  h.RunUnderLoad(2000, 4, [](const Setting& s) {
    if (s == Setting{1, 1}) return 2.0;  // one stream per core: the most requests/s
    if (s == Setting{1, 2}) return 3.0;
    return 2.5;                                // the default
  });
  const AutotuneStatus st = h.Status();
  EXPECT_EQ(st.load_clients, 4);
  EXPECT_EQ(st.state, AutotuneState::kAdopted);
  EXPECT_EQ(st.chosen, (Setting{1, 1}));
  // Every figure is the time per request (ms), not a request's latency (x4).
  for (const auto& round : st.round_medians_ns) {
    for (const auto& [setting, ns] : round) EXPECT_LT(ns, 3.5 * kMs) << setting.Label();
  }
}

TEST(AutotunerTest, UnderLoadKeepsTheDefaultWhenThroughputsAreEqual) {
  Harness h;
  h.Harness::now_ns += 1000 * kMs;
  h.RunUnderLoad(2000, 4, [](const Setting&) { return 2.5; });
  const AutotuneStatus st = h.Status();
  EXPECT_EQ(st.load_clients, 4);
  EXPECT_EQ(st.state, AutotuneState::kKeptDefault);
  EXPECT_EQ(h.control_.AdoptedFor(LoadClass::kUnderLoad4), FakeControl::kDefault);
}

TEST(AutotunerTest, ALargerGraphTakesOverAsTheMainGraph) {
  Harness h;
  h.Run(10, Fixed, "small", 10);
  ASSERT_TRUE(h.control_.exploring);
  h.Run(3, Fixed, "large", 1000);
  EXPECT_EQ(h.Status("small").state, AutotuneState::kSkipped);
  EXPECT_EQ(h.Status("large").state, AutotuneState::kExploring);
  h.Run(400, Fixed, "large", 1000);
  EXPECT_EQ(h.Status("large").state, AutotuneState::kAdopted);
  // The small graph keeps its place behind the large one.
  h.Run(10, Fixed, "other_small", 10);
  EXPECT_EQ(h.Status("other_small").state, AutotuneState::kSkipped);
}

TEST(AutotunerTest, ALargerGraphWithACachedSettingForAnyLoadDoesNotTakeOver) {
  Harness h;
  h.control_.adopted["large"][LoadClass::kUnderLoad8] = {1, 1};  // cached for 8 clients
  h.Run(10, Fixed, "small", 10);
  ASSERT_TRUE(h.control_.exploring);
  h.Run(3, Fixed, "large", 1000);
  EXPECT_EQ(h.Status("small").state, AutotuneState::kExploring);
}

TEST(AutotunerTest, IgnoresAStepThatStartedBeforeTheLayoutChanged) {
  Harness h;
  h.Run(3, Fixed);
  const AutotuneStatus before = h.Status();
  StepSample s;
  s.signature = "main";
  s.node_count = 100;
  s.start_ns = 0;  // long before the visit started
  s.end_ns = ++Harness::now_ns;
  h.tuner_.OnStep(s);
  h.tuner_.OnStep(s);
  EXPECT_EQ(h.Status().visits_done, before.visits_done);
  EXPECT_EQ(h.Status().cost_ns, before.cost_ns);
}

TEST(AutotunerTest, DecisionsAreHandedOutOnce) {
  Harness h;
  h.Run(400, Fixed);
  std::vector<AutotuneResult> first = h.tuner_.TakeDecisions();
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].signature, "main");
  EXPECT_TRUE(h.tuner_.TakeDecisions().empty());
  EXPECT_FALSE(h.tuner_.WaitForDecisions(1000));
}

}  // namespace
}  // namespace graphi
