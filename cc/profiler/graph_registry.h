// What GRAPHI knows about each graph it has run in this process.
//
// A GraphProfile is keyed by the graph signature: executors created for the
// same graph (a session re-created, a function instantiated again) share its
// cost model, step counter and adopted setting, provided their node names
// match (same construction, so node ids mean the same nodes).
//
// Adopted settings come from the cache (at import), tune() or the autotuner;
// they are kept by signature and load class (load_class.h), so they also
// apply to graphs seen later in the process. A profile knows which load class
// its graph is in now (its top-level steps overlapping or not); the adoption
// of that class (else of the other one) is the graph's setting in force, and
// it is handed to the AdoptionListener (the executor's Runtime), which
// decides whether the process-wide layout follows it: when it is adopted,
// when the graph registers, and when the graph changes class.
//
// Step timelines: a profile records the next step when asked
// (RecordNextStep), or every step up to a step number (RecordStepsThrough,
// set process-wide through the registry for GRAPHI_TRACE), so the last
// recorded timeline is that step or, for a graph that ran fewer steps, its
// last one. Past that step the check on the step path is one relaxed load.
//
// Free of TensorFlow types. Thread-safety: thread-safe.
#ifndef GRAPHI_TF_CC_PROFILER_GRAPH_REGISTRY_H_
#define GRAPHI_TF_CC_PROFILER_GRAPH_REGISTRY_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cc/tuning/adoption.h"
#include "cc/profiler/cost_model.h"
#include "cc/tuning/load_class.h"
#include "cc/profiler/step_timing_sampler.h"
#include "cc/profiler/timeline_recorder.h"
#include "cc/util/mutex.h"
#include "cc/util/thread_annotations.h"

namespace graphi {

// What the bookkeeping of a finished top-level step tells its executor.
struct TopLevelStepEnd {
  LoadClass load_class = LoadClass::kAlone;  // the graph's class, this step counted
  bool load_class_changed = false;           // ... which this step changed
  std::array<bool, kLoadClassCount> adopted{};  // whether each class has an adoption
};

class GraphProfile {
 public:
  // node_types[n] is node n's op type; empty if unknown.
  GraphProfile(std::string signature, std::vector<std::string> node_names,
               std::vector<std::vector<int>> successors,
               std::vector<std::string> node_types = {});

  const std::string& signature() const { return signature_; }
  int node_count() const { return static_cast<int>(node_names_.size()); }
  const std::vector<std::string>& node_names() const { return node_names_; }
  const std::vector<std::string>& node_types() const { return node_types_; }
  CostModel& costs() { return costs_; }

  // Counts a finished step and refreshes the ranks on a doubling schedule
  // (steps 1, 2, 4, ... 1024, then every 256): estimates settle quickly and
  // keep refining, and the O(V+E) refresh stays off most steps.
  void StepFinished();
  int64_t steps_run() const { return steps_run_.load(std::memory_order_relaxed); }
  // Of those, the steps TensorFlow's own executor ran (the "stock" setting).
  void CountStockExecutorStep() { stock_executor_steps_.fetch_add(1, std::memory_order_relaxed); }
  int64_t stock_executor_steps() const {
    return stock_executor_steps_.load(std::memory_order_relaxed);
  }

  // Called as a step starts: whether it times its kernels for the cost model
  // (step_timing_sampler.h: every step at first, then one in a stride). The
  // first step after the warm-up sizes the stride from the warm-up's costs.
  bool TakeTimingTurn();
  // Steps after the warm-up: one in this many is timed.
  int64_t timing_stride() const { return timing_sampler_.stride(); }

  // Top-level steps in flight: Begin returns whether another one was
  // running and fills *epoch and *in_flight (the steps in flight, this one
  // included); End returns whether another step started while this one ran
  // (so the two overlapped).
  bool BeginTopLevelStep(uint64_t* epoch, int* in_flight);
  bool EndTopLevelStep(uint64_t epoch);
  // Counts a finished top-level step toward the graph's load class
  // (`overlapped`: EndTopLevelStep's answer, or BeginTopLevelStep's).
  TopLevelStepEnd NoteTopLevelStepEnd(bool overlapped);
  LoadClass load_class() const;

  // Records `adoption` for its load class and applies its costs if its node
  // names match this graph (returns whether they did).
  bool ApplyAdoption(const Adoption& adoption);
  void ClearAdoption();
  // The adoption in force for this graph (AdoptionSlots::InForce for its
  // load class now), if any.
  bool adoption(Adoption* out) const;

  // Step timelines: arm the next step, then read what it ran.
  void RecordNextStep() { record_next_.store(true); }
  // Records every step that starts while fewer than `step` steps have
  // finished (0: off).
  void RecordStepsThrough(int64_t step) {
    record_through_step_.store(step, std::memory_order_relaxed);
  }
  // Called as a step starts: whether it should record its timeline.
  bool TakeRecordRequest() {
    if (record_next_.load(std::memory_order_relaxed) && record_next_.exchange(false)) return true;
    const int64_t through = record_through_step_.load(std::memory_order_relaxed);
    return through > 0 && steps_run() < through;
  }
  // Whether a step starting now would record its timeline (as
  // TakeRecordRequest, without taking the request).
  bool RecordPending() const {
    if (record_next_.load(std::memory_order_relaxed)) return true;
    const int64_t through = record_through_step_.load(std::memory_order_relaxed);
    return through > 0 && steps_run() < through;
  }
  // Keeps a recorded step (numbered with the steps finished so far, so call
  // it after StepFinished()).
  void SetLastTimeline(StepTimeline timeline);
  StepTimeline LastStep() const;
  std::vector<NodeExecution> LastTimeline() const { return LastStep().executions; }

 private:
  const std::string signature_;
  const std::vector<std::string> node_names_;
  const std::vector<std::string> node_types_;
  CostModel costs_;
  StepTimingSampler timing_sampler_;
  std::atomic<int64_t> steps_run_{0};
  std::atomic<int64_t> stock_executor_steps_{0};
  std::atomic<bool> record_next_{false};
  std::atomic<int64_t> record_through_step_{0};
  std::atomic<int> top_level_in_flight_{0};
  std::atomic<uint64_t> overlap_epoch_{0};

  mutable Mutex mu_;
  AdoptionSlots adoptions_ GRAPHI_GUARDED_BY(mu_);
  LoadClassTracker load_ GRAPHI_GUARDED_BY(mu_);
  StepTimeline last_timeline_ GRAPHI_GUARDED_BY(mu_);
};

class GraphRegistry {
 public:
  static GraphRegistry& Get();

  // The profile for a graph: the existing one for `signature` if its node
  // names match, else a new one (which then becomes the one listed). Applies
  // an adoption recorded for the signature.
  std::shared_ptr<GraphProfile> Register(const std::string& signature,
                                         std::vector<std::string> node_names,
                                         std::vector<std::vector<int>> successors,
                                         std::vector<std::string> node_types = {});

  // Every graph, now and registered later, records each step until `step`
  // steps have finished (GraphProfile::RecordStepsThrough); 0 turns it off.
  void RecordStepsThrough(int64_t step);

  // Records an adoption for `signature` and its load class (now and for
  // graphs registered later) and, once the graph runs and if it is the one
  // in force for the graph's class, hands it to the listener. Returns
  // whether costs were applied to a live graph.
  bool Adopt(const std::string& signature, const Adoption& adoption);

  // `profile`'s graph changed load class (TopLevelStepEnd): hands the
  // adoption now in force for it, if any, to the listener.
  void LoadClassChanged(const GraphProfile& profile);

  // Forgets every adoption (and tells the listener): for tests, and for
  // users who want the default back without restarting.
  void ClearAdoptions();

  // Who hears about adoptions of running graphs (null: nobody). Not owned;
  // must live as long as the registry (the process).
  void SetAdoptionListener(AdoptionListener* listener);

  std::vector<std::shared_ptr<GraphProfile>> List() const;
  std::shared_ptr<GraphProfile> Find(const std::string& signature) const;

 private:
  // Hands `adoption` of the running graph `profile` to the listener.
  void Forward(const GraphProfile& profile, const Adoption& adoption, bool newly_adopted)
      GRAPHI_LOCKS_EXCLUDED(mu_);

  std::atomic<AdoptionListener*> listener_{nullptr};
  mutable Mutex mu_;
  std::map<std::string, std::shared_ptr<GraphProfile>> profiles_ GRAPHI_GUARDED_BY(mu_);
  std::map<std::string, AdoptionSlots> adoptions_ GRAPHI_GUARDED_BY(mu_);
  int64_t record_through_step_ GRAPHI_GUARDED_BY(mu_) = 0;
};

}  // namespace graphi

#endif  // GRAPHI_TF_CC_PROFILER_GRAPH_REGISTRY_H_
