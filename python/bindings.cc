// pybind11 bindings of the GRAPHI runtime: configuration, introspection, and
// the topology / layout functions (exposed so tests can drive them with a
// fake sysfs tree).
//
// The same shared object is TensorFlow's plugin (registration.cc): Python
// loads it with tf.load_library first, which registers "GRAPHI", and then
// imports it as the module graphi_tf._graphi_tf.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "cc/executor/ready_queue.h"
#include "cc/executor/runtime.h"
#include "cc/executor/team_layout.h"
#include "cc/executor/thread_affinity.h"
#include "cc/executor/topology.h"

#ifndef GRAPHI_BUILT_AGAINST_TF
#define GRAPHI_BUILT_AGAINST_TF "unknown"
#endif

namespace graphi {
bool GraphiExecutorRegistered();
}  // namespace graphi

namespace py = pybind11;

namespace {

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

}  // namespace

PYBIND11_MODULE(_graphi_tf, m) {
  m.doc() = "Native part of graphi_tf: the GRAPHI executor runtime.";
  m.attr("BUILT_AGAINST_TF") = GRAPHI_BUILT_AGAINST_TF;

  m.def("executor_registered", &graphi::GraphiExecutorRegistered,
        "Whether executor type 'GRAPHI' is registered with TensorFlow.");

  m.def(
      "configure",
      [](int executors, int threads_per_executor, const std::string& policy) {
        std::string error;
        if (!graphi::Runtime::Get().Configure(executors, threads_per_executor, policy, &error)) {
          throw py::value_error(error);
        }
      },
      py::arg("executors") = 0, py::arg("threads_per_executor") = 0, py::arg("policy") = "",
      "Sets the team layout for later steps (0 = environment or default).");

  m.def("runtime_info", []() {
    graphi::Runtime& rt = graphi::Runtime::Get();
    py::dict d = TopologyToDict(rt.topology());
    graphi::TeamLayout layout;
    graphi::ReadyPolicy policy;
    std::string source, error;
    if (rt.Describe(&layout, &policy, &source, &error)) {
      d["executors"] = layout.executors;
      d["threads_per_executor"] = layout.threads_per_executor;
      d["teams"] = layout.team_cpus;
      d["policy"] = std::string(graphi::ReadyPolicyName(policy));
      d["setting_source"] = source;
      d["setting_error"] = py::none();
    } else {
      d["setting_error"] = error;
    }
    return d;
  });

  m.def("scheduler_stats", []() {
    py::dict d;
    std::string error;
    std::shared_ptr<graphi::TeamSet> teams = graphi::Runtime::Get().CurrentTeams(&error);
    if (teams == nullptr) throw py::value_error(error);
    d["generation"] = teams->generation();
    d["tasks_run_per_team"] = teams->scheduler().tasks_run_per_team();
    d["substitutes_started"] = teams->scheduler().substitutes_started();
    d["teams"] = teams->layout().team_cpus;
    return d;
  }, "Counters of the live teams (starts them if needed).");

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
    return graphi::SymmetricSettings(graphi::Runtime::Get().topology());
  });

  m.def("current_thread_affinity", &graphi::CurrentThreadAffinity);
}
