// pybind11 bindings of the GRAPHI runtime: configuration, introspection, and
// the topology / layout functions (exposed so tests can drive them with a
// fake sysfs tree).
//
// The same shared object is TensorFlow's plugin (registration.cc): Python
// loads it with tf.load_library first, which registers "GRAPHI", and then
// imports it as the module graphi_tf._graphi_tf.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "cc/executor/process_autotuner.h"
#include "cc/executor/runtime.h"
#include "cc/platform/topology.h"
#include "cc/profiler/graph_registry.h"
#include "cc/teams/ready_queue.h"
#include "cc/teams/setting.h"
#include "cc/teams/team_layout.h"
#include "cc/tuning/adoption.h"
#include "cc/tuning/autotuner.h"
#include "cc/tuning/tuning_decision.h"

#ifndef GRAPHI_BUILT_AGAINST_TF
#define GRAPHI_BUILT_AGAINST_TF "unknown"
#endif

namespace graphi {
bool GraphiExecutorRegistered();
}  // namespace graphi

namespace py = pybind11;

namespace {

std::shared_ptr<graphi::GraphProfile> FindProfile(const std::string& signature) {
  std::shared_ptr<graphi::GraphProfile> profile = graphi::GraphRegistry::Get().Find(signature);
  if (profile == nullptr) throw py::key_error("no graph with signature '" + signature + "' seen");
  return profile;
}

py::dict ExecutionToDict(const graphi::GraphProfile& profile, const graphi::StepTimeline& step,
                         const graphi::NodeExecution& e) {
  const bool known = e.node_id >= 0 && e.node_id < profile.node_count();
  py::dict d;
  d["node_id"] = e.node_id;
  d["node"] = known ? profile.node_names()[e.node_id] : "";
  d["op"] = known && e.node_id < static_cast<int>(profile.node_types().size())
                ? profile.node_types()[e.node_id]
                : "";
  d["team"] = e.team;
  // Split into blocks that idle teams' leaders could take (not a claim that they did).
  d["shared"] = e.shared;
  d["start_ns"] = e.start_ns;
  d["end_ns"] = e.end_ns;
  d["step_start_ns"] = step.start_ns;
  return d;
}

// Python's spelling of a complete setting (graphi_tf.decision.Setting):
// [E, T] for teams, [0, 0] for stock, [0, 0, I, A] for stock point IxA.
py::list SettingToList(const graphi::Setting& s) {
  py::list l;
  l.append(s.stock ? 0 : s.executors);
  l.append(s.stock ? 0 : s.threads_per_executor);
  if (s.stock_point()) {
    l.append(s.inter_op_threads());
    l.append(s.intra_op_threads());
  }
  return l;
}

graphi::Setting SettingFromPair(const std::pair<int, int>& p) {
  return p.first == 0 && p.second == 0 ? graphi::kStockSetting
                                       : graphi::TeamsSetting(p.first, p.second);
}

// A setting's label ("2x1", "stock", "stock:2x1"); a ValueError otherwise.
graphi::Setting SettingFromLabel(const std::string& label) {
  graphi::Setting setting;
  std::string error;
  if (!graphi::ParseSetting(label, "setting", &setting, &error)) throw py::value_error(error);
  return setting;
}

std::vector<graphi::Setting> SettingsFromLabels(const std::vector<std::string>& labels) {
  std::vector<graphi::Setting> out;
  for (const auto& label : labels) out.push_back(SettingFromLabel(label));
  return out;
}

// Per-round medians keyed by label, keyed by Setting.
std::vector<std::map<graphi::Setting, double>> RoundMediansFromLabels(
    const std::vector<std::map<std::string, double>>& rounds) {
  std::vector<std::map<graphi::Setting, double>> out;
  for (const auto& round : rounds) {
    std::map<graphi::Setting, double> r;
    for (const auto& [label, median] : round) r[SettingFromLabel(label)] = median;
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<std::pair<int, int>> SettingsToPairs(const std::vector<graphi::Setting>& settings) {
  std::vector<std::pair<int, int>> out;
  for (const graphi::Setting& s : settings) out.emplace_back(s.executors, s.threads_per_executor);
  return out;
}

// A policy name, "" for none; a ValueError naming the allowed values otherwise.
std::optional<graphi::ReadyPolicy> PolicyArg(const std::string& policy) {
  if (policy.empty()) return std::nullopt;
  graphi::ReadyPolicy parsed;
  if (!graphi::ParseReadyPolicy(policy, &parsed)) {
    throw py::value_error("policy='" + policy + "' is not valid; allowed: fifo, critical_path_first");
  }
  return parsed;
}

// The autotuner's view of one graph, in milliseconds.
py::dict DecisionToDict(const graphi::TuningDecision& d);

// Per-round medians (ns) as a list of {label: ms}.
py::list RoundsToList(const std::vector<std::map<graphi::Setting, double>>& rounds_ns) {
  py::list rounds;
  for (const auto& round : rounds_ns) {
    py::dict r;
    for (const auto& kv : round) r[py::str(kv.first.Label())] = kv.second / 1e6;
    rounds.append(r);
  }
  return rounds;
}

py::dict AutotuneStatusToDict(const graphi::AutotuneStatus& st) {
  py::dict d;
  d["state"] = std::string(graphi::AutotuneStateName(st.state));
  d["reason"] = st.reason;
  d["visits_done"] = st.visits_done;
  d["visits_planned"] = st.visits_planned;
  d["progress"] = std::to_string(st.visits_done) + "/" + std::to_string(st.visits_planned);
  d["rounds"] = st.rounds;
  d["discard_per_visit"] = st.discard_per_visit;
  d["timed_per_visit"] = st.timed_per_visit;
  d["screening_timed_per_visit"] = st.screening_timed_per_visit;
  d["runoff_timed_per_visit"] = st.runoff_timed_per_visit;
  d["load_clients"] = st.load_clients;
  d["load_class"] = std::string(graphi::LoadClassName(st.load_class));
  const bool exploring = st.state == graphi::AutotuneState::kExploring;
  const bool decided = st.state == graphi::AutotuneState::kAdopted ||
                       st.state == graphi::AutotuneState::kKeptDefault;
  d["current"] = exploring ? py::object(SettingToList(st.current)) : py::none();
  d["chosen"] = decided ? py::object(SettingToList(st.chosen)) : py::none();
  d["cost_ms"] = st.cost_ns / 1e6;
  d["exploration_s"] = st.exploration_wall_ns / 1e9;
  d["reference_step_ms"] = st.reference_step_ns / 1e6;
  py::list order;
  for (const auto& s : st.order) order.append(SettingToList(s));
  d["order"] = order;
  d["round_medians_ms"] = RoundsToList(st.round_medians_ns);
  py::dict screening;
  for (const auto& kv : st.screening_medians_ns) screening[py::str(kv.first.Label())] = kv.second / 1e6;
  d["screening_medians_ms"] = screening;
  d["runoff"] = st.runoff ? py::object(py::str(st.runoff_setting.Label())) : py::none();
  d["runoff_medians_ms"] = RoundsToList(st.runoff_medians_ns);
  py::dict eliminated;
  for (const auto& kv : st.eliminated_after_round) {
    eliminated[py::str(kv.first.Label())] = kv.second;
  }
  d["eliminated_after_round"] = eliminated;
  // The decision as the rule made it: Python stores and shows it, never decides again.
  d["decision"] = decided ? py::object(DecisionToDict(st.decision)) : py::none();
  return d;
}

py::dict TopologyToDict(const graphi::Topology& t) {
  py::dict d;
  d["tiles"] = t.tiles;
  d["usable_cpus"] = t.usable_cpus;
  d["quota_cores"] = t.quota_cores;
  d["usable_cores"] = graphi::UsableCores(t);
  d["cpu_model"] = t.cpu_model;
  return d;
}

graphi::Topology TopologyFromArgs(const std::string& sysfs_root, const std::string& cgroup_root,
                                  const std::string& proc_root, const std::vector<int>& affinity) {
  graphi::TopologySources sources;
  sources.sysfs_root = sysfs_root;
  sources.cgroup_root = cgroup_root;
  sources.proc_root = proc_root;
  sources.affinity = affinity;
  graphi::Topology topology;
  std::string error;
  if (!graphi::DiscoverTopology(sources, &topology, &error)) throw std::runtime_error(error);
  return topology;
}

py::dict RuntimeInfo() {
  graphi::Runtime& rt = graphi::Runtime::Get();
  py::dict d = TopologyToDict(rt.topology());
  // Why the machine's topology could not be read (GRAPHI then treats each
  // usable cpu as a tile of its own); None when it was.
  d["topology_error"] =
      rt.topology_error().empty() ? py::object(py::none()) : py::object(py::str(rt.topology_error()));
  // The malloc arena limit GRAPHI raised at load (None: glibc's or the user's).
  d["malloc_arena_max"] = rt.malloc_arena_max() > 0 ? py::object(py::int_(rt.malloc_arena_max()))
                                                    : py::object(py::none());
  graphi::ResolvedSetting resolved;
  graphi::TeamLayout layout;
  std::string error;
  if (rt.Describe(&resolved, &layout, &error)) {
    // The "stock" setting (0 x 0): steps run on TensorFlow's own executor,
    // on its pools or on a stock point's ("stock:IxA", see "setting").
    const bool stock = resolved.setting.stock;
    d["stock_pools"] = stock;
    d["setting"] = resolved.setting.Label();
    d["executors"] = stock ? 0 : resolved.setting.executors;
    d["threads_per_executor"] = stock ? 0 : resolved.setting.threads_per_executor;
    d["teams"] = stock ? std::vector<std::vector<int>>() : layout.team_cpus;
    d["policy"] = std::string(graphi::ReadyPolicyName(*resolved.setting.policy));
    d["setting_source"] = std::string(graphi::SettingSourceName(resolved.source));
    d["setting_error"] = py::none();
  } else {
    d["setting_error"] = error;
  }
  return d;
}

// Each graph GRAPHI has run, with the setting in use and where it came from.
py::list GraphsToList() {
  graphi::ResolvedSetting in_force;
  graphi::TeamLayout layout;
  std::string error;
  const bool resolved = graphi::Runtime::Get().Describe(&in_force, &layout, &error);
  py::list out;
  for (const auto& profile : graphi::GraphRegistry::Get().List()) {
    py::dict d;
    d["signature"] = profile->signature();
    d["node_count"] = profile->node_count();
    d["steps_run"] = profile->steps_run();
    // Steps TensorFlow's own executor ran for GRAPHI (the "stock" setting).
    d["steps_on_stock_executor"] = profile->stock_executor_steps();
    d["timing_stride"] = profile->timing_stride();
    d["costs_known"] = profile->costs().costs_known();
    // "alone" or "under_load_<N>" (load_class.h): whose adopted setting the graph follows now.
    d["load_class"] = std::string(graphi::LoadClassName(profile->load().load_class()));
    if (resolved) {
      d["stock_pools"] = in_force.setting.stock;
      d["setting"] = in_force.setting.Label();
      d["executors"] = in_force.setting.stock ? 0 : in_force.setting.executors;
      d["threads_per_executor"] = in_force.setting.stock ? 0 : in_force.setting.threads_per_executor;
      d["policy"] = std::string(graphi::ReadyPolicyName(*in_force.setting.policy));
      graphi::Adoption adoption;
      const bool has_own = profile->load().InForce(&adoption);
      d["source"] = std::string(graphi::SettingSourceName(graphi::GraphSettingSource(
          in_force.source, in_force.setting, has_own ? &adoption : nullptr)));
    } else {
      d["source"] = py::none();
    }
    graphi::AutotuneStatus status;
    if (graphi::ProcessAutotuner().Status(profile->signature(), &status)) {
      d["autotune"] = AutotuneStatusToDict(status);
    } else {
      d["autotune"] = py::none();
    }
    out.append(d);
  }
  return out;
}

py::dict SchedulerStats() {
  std::string error;
  std::shared_ptr<graphi::TeamSet> teams = graphi::Runtime::Get().CurrentTeams(&error);
  if (teams == nullptr) throw py::value_error(error);
  py::dict d;
  d["generation"] = teams->generation();
  d["tasks_run_per_team"] = teams->scheduler().tasks_run_per_team();
  d["substitutes_started"] = teams->scheduler().substitutes_started();
  d["substitutes_alive"] = teams->scheduler().substitutes_alive();
  d["blocks_stolen_per_team"] = teams->scheduler().blocks_stolen_per_team();
  d["stolen_ns_per_team"] = teams->scheduler().stolen_ns_per_team();
  d["teams"] = teams->layout().team_cpus;
  return d;
}

py::dict GraphProfileToDict(const std::string& signature) {
  std::shared_ptr<graphi::GraphProfile> profile = FindProfile(signature);
  py::dict d;
  d["signature"] = profile->signature();
  d["node_count"] = profile->node_count();
  d["node_names"] = profile->node_names();
  d["node_types"] = profile->node_types();
  d["successors"] = profile->costs().successors();
  d["node_costs_ns"] = profile->costs().Estimates();
  d["ranks_ns"] = profile->costs().Ranks();
  d["steps_run"] = profile->steps_run();
  d["costs_known"] = profile->costs().costs_known();
  return d;
}

py::dict DecisionToDict(const graphi::TuningDecision& d) {
  py::dict out;
  out["default"] = SettingToList(d.default_setting);
  out["chosen"] = SettingToList(d.chosen);
  out["adopted"] = d.adopted;
  out["reason"] = d.reason;
  py::list evidence;
  for (const graphi::SettingEvidence& e : d.evidence) {
    py::dict ed;
    ed["setting"] = SettingToList(e.setting);
    ed["ratios"] = e.ratios;
    ed["ratio_median"] = e.ratio_median;
    ed["ratio_spread"] = e.ratio_spread;
    ed["wins"] = e.wins;
    ed["qualifies"] = e.qualifies;
    ed["screening_ratio"] =
        e.screening_ratio > 0 ? py::object(py::float_(e.screening_ratio)) : py::none();
    ed["screened_out"] = e.screened_out;
    evidence.append(ed);
  }
  out["evidence"] = evidence;
  return out;
}

py::dict LastStepRecord(const std::string& signature) {
  std::shared_ptr<graphi::GraphProfile> profile = FindProfile(signature);
  const graphi::StepTimeline step = profile->recorder().Last();
  py::dict d;
  d["signature"] = profile->signature();
  d["step"] = step.step;
  d["start_ns"] = step.start_ns;
  d["end_ns"] = step.end_ns;
  d["wall_start_unix_ns"] = step.wall_start_unix_ns;
  py::list executions;
  for (const graphi::NodeExecution& e : step.executions) {
    executions.append(ExecutionToDict(*profile, step, e));
  }
  d["executions"] = executions;
  return d;
}

bool AdoptSetting(const std::string& signature, int executors, int threads_per_executor,
                  const std::string& policy, const std::string& source,
                  const std::vector<int64_t>& node_costs_ns,
                  const std::vector<std::string>& node_names, const std::string& load_class,
                  int inter_op_threads, int intra_op_threads) {
  graphi::Adoption adoption;
  std::string unused;
  // From Python only the cache and tune() adopt; "autotuned" is the autotuner's own.
  if (!graphi::ParseAdoptedSource(source, &adoption.source, &unused) ||
      adoption.source == graphi::SettingSource::kAutotuned) {
    throw py::value_error("source='" + source + "' is invalid; allowed: cache, tuned");
  }
  if (!graphi::ParseLoadClass(load_class, &adoption.load_class)) {
    throw py::value_error("load_class='" + load_class + "' is invalid; allowed: " +
                          graphi::LoadClassNames());
  }
  if (executors < 0 || threads_per_executor < 0 || (executors == 0) != (threads_per_executor == 0)) {
    throw py::value_error("executors x threads_per_executor = " + std::to_string(executors) + " x " +
                          std::to_string(threads_per_executor) +
                          " is invalid; allowed: both >= 1, or 0 x 0 for stock");
  }
  adoption.setting = SettingFromPair({executors, threads_per_executor});
  if (inter_op_threads != 0 || intra_op_threads != 0) {
    if (!adoption.setting.stock || inter_op_threads < 1 || intra_op_threads < 1) {
      throw py::value_error(
          "inter_op_threads x intra_op_threads = " + std::to_string(inter_op_threads) + " x " +
          std::to_string(intra_op_threads) +
          " is invalid; allowed: both >= 1 with executors x threads_per_executor = 0 x 0 "
          "(a stock point), or both 0");
    }
    adoption.setting = graphi::StockPointSetting(inter_op_threads, intra_op_threads);
  }
  adoption.setting.policy = PolicyArg(policy);
  adoption.node_costs_ns = node_costs_ns;
  adoption.node_names = node_names;
  return graphi::GraphRegistry::Get().Adopt(signature, adoption);
}

}  // namespace

namespace {

// Layout and autotuning settings.
void DefineSettings(py::module_& m) {
  m.def(
      "configure",
      [](int executors, int threads_per_executor, const std::string& policy) {
        std::string error;
        graphi::Setting setting;
        setting.executors = executors;
        setting.threads_per_executor = threads_per_executor;
        setting.policy = PolicyArg(policy);
        if (!graphi::Runtime::Get().Configure(setting, &error)) {
          throw py::value_error(error);
        }
      },
      py::arg("executors") = 0, py::arg("threads_per_executor") = 0, py::arg("policy") = "",
      "Sets the team layout for later steps (0 = environment or default).");
  m.def("set_autotune", [](int mode) { graphi::Runtime::Get().SetAutotune(mode); },
        py::arg("mode"), "-1: follow GRAPHI_AUTOTUNE / GRAPHI_TUNE; 0: off; 1: on.");
  m.def("autotune_enabled", []() {
    std::string error;
    const bool enabled = graphi::Runtime::Get().AutotuneEnabled(&error);
    if (!error.empty()) throw py::value_error(error);
    return enabled;
  }, "Whether online autotuning is on.");
}

// What the runtime sees and runs: machine, setting, teams, graphs.
void DefineIntrospection(py::module_& m) {
  m.def("executor_registered", &graphi::GraphiExecutorRegistered,
        "Whether some executor factory is registered under the type name 'GRAPHI'.");
  m.def("runtime_info", &RuntimeInfo);
  m.def("scheduler_stats", &SchedulerStats, "Counters of the live teams (starts them if needed).");
  m.def("graphs", &GraphsToList,
        "Each graph GRAPHI has run in this process, with the setting in use and its source.");
  m.def("graph_profile", &GraphProfileToDict, py::arg("signature"));
}

// Topology and layout functions, also over a fake sysfs tree (tests).
void DefineTopology(py::module_& m) {
  m.def("discover_topology", [](const std::string& sysfs_root, const std::string& cgroup_root,
                                const std::string& proc_root, const std::vector<int>& affinity) {
    return TopologyToDict(TopologyFromArgs(sysfs_root, cgroup_root, proc_root, affinity));
  }, py::arg("sysfs_root") = "/sys", py::arg("cgroup_root") = "/sys/fs/cgroup",
     py::arg("proc_root") = "/proc", py::arg("affinity") = std::vector<int>());
  m.def("build_team_layout", [](int executors, int threads_per_executor,
                                const std::string& sysfs_root, const std::string& cgroup_root,
                                const std::string& proc_root, const std::vector<int>& affinity) {
    graphi::Topology topology = TopologyFromArgs(sysfs_root, cgroup_root, proc_root, affinity);
    graphi::TeamLayout layout;
    std::string error;
    if (!graphi::BuildTeamLayout(topology, executors, threads_per_executor, &layout, &error)) {
      throw py::value_error(error);
    }
    return layout.team_cpus;
  }, py::arg("executors"), py::arg("threads_per_executor"), py::arg("sysfs_root") = "/sys",
     py::arg("cgroup_root") = "/sys/fs/cgroup", py::arg("proc_root") = "/proc",
     py::arg("affinity") = std::vector<int>());
  m.def("symmetric_settings", []() {
    return SettingsToPairs(graphi::SymmetricSettings(graphi::Runtime::Get().topology()));
  });
  m.def("default_setting", []() {
    const graphi::Setting s = graphi::DefaultSetting(graphi::Runtime::Get().topology());
    return std::make_pair(s.executors, s.threads_per_executor);
  }, "The (executors, threads_per_executor) GRAPHI uses when nothing is set, cached or tuned.");
}

// Adopted settings and the autotuner's decisions.
void DefineTuning(py::module_& m) {
  m.def("adopt_setting", &AdoptSetting, py::arg("signature"), py::arg("executors"),
        py::arg("threads_per_executor"), py::arg("policy"), py::arg("source"),
        py::arg("node_costs_ns"), py::arg("node_names"), py::arg("load_class") = "alone",
        py::arg("inter_op_threads") = 0, py::arg("intra_op_threads") = 0,
        "Records a cached or tuned setting (and costs) for a graph signature and load class "
        "(alone: one step at a time; under_load_2 ... under_load_64: that level of steps in "
        "flight, cc/tuning/load_class.h). A stock point: 0 x 0 "
        "with its inter_op_threads and intra_op_threads.");
  m.def("clear_adoptions", []() {
    graphi::ProcessAutotuner().Reset();
    graphi::GraphRegistry::Get().ClearAdoptions();
  }, "Forgets cached, tuned and autotuned settings adopted in this process, and what the "
     "autotuner has seen.");
  m.def("take_autotune_decisions", []() {
    py::list out;
    for (const graphi::AutotuneResult& r : graphi::ProcessAutotuner().TakeDecisions()) {
      py::dict d = AutotuneStatusToDict(r.status);
      d["signature"] = r.signature;
      d["default"] = SettingToList(r.status.decision.default_setting);
      out.append(d);
    }
    return out;
  }, "Autotuning decisions made since the last call (for the cache).");
  m.def("tuning_candidates", []() {
    return SettingsToPairs(graphi::TuningCandidates(graphi::Runtime::Get().topology()));
  }, "The settings the autotuner tries on this machine.");
  m.def("autotune_candidates", []() {
    std::vector<std::string> out;
    for (const graphi::Setting& s : graphi::ProcessAutotuner().candidates()) out.push_back(s.Label());
    return out;
  }, "Labels of the settings the online autotuner explores on this machine, its default "
     "(\"stock\") among them.");
  m.def("decide_setting", [](const std::vector<std::map<std::string, double>>& rounds,
                             const std::string& default_setting,
                             const std::vector<std::string>& order) {
    return DecisionToDict(graphi::DecideSetting(
        RoundMediansFromLabels(rounds), SettingFromLabel(default_setting),
        SettingsFromLabels(order), {}));
  }, py::arg("round_medians"), py::arg("default"), py::arg("order"),
     "The decision rule (tuning_decision.h): graphi_tf.tune's decisions are made here, "
     "as the online autotuner's are (its runoff included: the same rule on its rounds).");
  m.def("settings_to_eliminate", [](const std::vector<std::map<std::string, double>>& rounds,
                                    const std::vector<std::string>& live,
                                    const std::string& default_setting) {
    std::vector<std::string> out;
    for (const graphi::Setting& s : graphi::SettingsToEliminate(
             RoundMediansFromLabels(rounds), SettingsFromLabels(live),
             SettingFromLabel(default_setting))) {
      out.push_back(s.Label());
    }
    return out;
  }, py::arg("round_medians"), py::arg("live"), py::arg("default"),
     "The settings of `live` timed no more after these rounds (labels; tuning_decision.h).");
  m.def("runoff_candidate", [](const std::vector<std::map<std::string, double>>& rounds,
                               const std::string& default_setting,
                               const std::vector<std::string>& order) -> py::object {
    const graphi::TuningDecision decided = graphi::DecideSetting(
        RoundMediansFromLabels(rounds), SettingFromLabel(default_setting), SettingsFromLabels(order));
    const graphi::SettingEvidence* close = graphi::RunoffCandidate(decided);
    if (close == nullptr) return py::none();
    return py::str(close->setting.Label());
  }, py::arg("round_medians"), py::arg("default"), py::arg("order"),
     "The setting these rounds leave close enough to the default for the online "
     "autotuner's runoff (a label), or None (tuning_decision.h).");
  m.def("decision_rule", []() {
    py::dict d;
    d["min_rounds_to_adopt"] = graphi::kMinRoundsToAdopt;
    d["sign_test_alpha"] = graphi::kSignTestAlpha;
    d["eliminate_ratio"] = graphi::kEliminateRatio;
    d["screen_out_ratio"] = graphi::kScreenOutRatio;
    d["runoff_below_ratio"] = graphi::kRunoffBelowRatio;
    return d;
  }, "The decision rule's constants.");
}

// Step timelines.
void DefineTimelines(py::module_& m) {
  m.def("record_next_step", [](const std::string& signature) {
    FindProfile(signature)->recorder().RecordNext();
  }, py::arg("signature"), "Asks the next step of this graph to record its timeline.");
  m.def("record_steps_through", [](int64_t step) {
    if (step < 0) throw py::value_error("step=" + std::to_string(step) + " is invalid; allowed: >= 0");
    graphi::GraphRegistry::Get().RecordStepsThrough(step);
  }, py::arg("step"),
     "Every graph (now and later) records each step until `step` steps have finished; 0: off.");
  m.def("last_step_timeline", [](const std::string& signature) {
    std::shared_ptr<graphi::GraphProfile> profile = FindProfile(signature);
    const graphi::StepTimeline step = profile->recorder().Last();
    py::list out;
    for (const graphi::NodeExecution& e : step.executions) {
      out.append(ExecutionToDict(*profile, step, e));
    }
    return out;
  }, py::arg("signature"), "Node executions of the last recorded step, in completion order.");
  m.def("last_step_record", &LastStepRecord, py::arg("signature"),
        "The last recorded step: its number (0: none yet), start/end (monotonic-clock ns), "
        "wall-clock start, and node executions in completion order.");
}

}  // namespace

PYBIND11_MODULE(_graphi_tf, m) {
  m.doc() = "Native part of graphi_tf: the GRAPHI executor runtime.";
  m.attr("BUILT_AGAINST_TF") = GRAPHI_BUILT_AGAINST_TF;
  DefineSettings(m);
  DefineIntrospection(m);
  DefineTopology(m);
  DefineTuning(m);
  DefineTimelines(m);
}
