// What GRAPHI knows about each graph it has run in this process.
//
// A GraphProfile is keyed by the graph signature: executors created for the
// same graph (a session re-created, a function instantiated again) share its
// cost model, step counter and adopted setting, provided their node names
// match (same construction, so node ids mean the same nodes).
//
// Adopted settings come from the cache (at import) or from tune(); they are
// kept by signature, so they also apply to graphs seen later in the process,
// and are forwarded to the Runtime, which decides whether the process-wide
// layout follows them.
//
// Free of TensorFlow types. Thread-safety: thread-safe.
#ifndef GRAPHI_TF_CC_PROFILER_GRAPH_REGISTRY_H_
#define GRAPHI_TF_CC_PROFILER_GRAPH_REGISTRY_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "cc/profiler/cost_model.h"
#include "cc/profiler/timeline_recorder.h"

namespace graphi {

struct GraphSetting {
  int executors = 0;
  int threads_per_executor = 0;
  std::string policy;
};

// A setting (and costs) recorded for a signature by the cache or by tune().
struct Adoption {
  GraphSetting setting;
  std::string source;  // "cache" or "tuned"
  std::vector<int64_t> node_costs_ns;
  std::vector<std::string> node_names;
};

class GraphProfile {
 public:
  GraphProfile(std::string signature, std::vector<std::string> node_names,
               std::vector<std::vector<int>> successors);

  const std::string& signature() const { return signature_; }
  int node_count() const { return static_cast<int>(node_names_.size()); }
  const std::vector<std::string>& node_names() const { return node_names_; }
  CostModel& costs() { return costs_; }

  // Counts a finished step and refreshes the ranks on a doubling schedule
  // (steps 1, 2, 4, ... 1024, then every 256): estimates settle quickly and
  // keep refining, and the O(V+E) refresh stays off most steps.
  void StepFinished();
  int64_t steps_run() const { return steps_run_.load(std::memory_order_relaxed); }

  // Applies an adoption's costs if its node names match this graph.
  bool ApplyAdoption(const Adoption& adoption);
  void ClearAdoption();
  // The adoption in force for this graph, if any.
  bool adoption(Adoption* out) const;

  // Step timelines: arm the next step, then read what it ran.
  void RecordNextStep() { record_next_.store(true); }
  bool TakeRecordRequest() { return record_next_.exchange(false); }
  void SetLastTimeline(std::vector<NodeExecution> timeline);
  std::vector<NodeExecution> LastTimeline() const;

 private:
  const std::string signature_;
  const std::vector<std::string> node_names_;
  CostModel costs_;
  std::atomic<int64_t> steps_run_{0};
  std::atomic<bool> record_next_{false};

  mutable std::mutex mu_;
  bool has_adoption_ = false;             // guarded by mu_
  Adoption adoption_;                     // guarded by mu_
  std::vector<NodeExecution> last_timeline_;  // guarded by mu_
};

class GraphRegistry {
 public:
  static GraphRegistry& Get();

  // The profile for a graph: the existing one for `signature` if its node
  // names match, else a new one (which then becomes the one listed). Applies
  // an adoption recorded for the signature.
  std::shared_ptr<GraphProfile> Register(const std::string& signature,
                                         std::vector<std::string> node_names,
                                         std::vector<std::vector<int>> successors);

  // Records an adoption for `signature` (now and for graphs registered
  // later) and hands its setting to the Runtime. Returns whether costs were
  // applied to a live graph.
  bool Adopt(const std::string& signature, const Adoption& adoption);

  // Forgets every adoption (and the Runtime's adopted setting): for tests,
  // and for users who want the default back without restarting.
  void ClearAdoptions();

  std::vector<std::shared_ptr<GraphProfile>> List() const;
  std::shared_ptr<GraphProfile> Find(const std::string& signature) const;

 private:
  void ForwardToRuntime(const GraphProfile* profile, const Adoption& adoption);

  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<GraphProfile>> profiles_;  // guarded by mu_
  std::map<std::string, Adoption> adoptions_;                      // guarded by mu_
};

}  // namespace graphi

#endif  // GRAPHI_TF_CC_PROFILER_GRAPH_REGISTRY_H_
