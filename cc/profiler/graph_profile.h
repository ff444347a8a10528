// What GRAPHI knows about one graph it has run in this process.
//
// A GraphProfile is keyed by the graph signature (graph_registry.h):
// executors created for the same graph (a session re-created, a function
// instantiated again) share it, provided their node names match (same
// construction, so node ids mean the same nodes). It holds the graph's
// identity, its cost model and which steps time their kernels, its step
// counts, and two parts with jobs of their own: its load and adopted
// settings (GraphLoad, graph_load.h) and its step recording (StepRecorder,
// step_recorder.h).
//
// Free of TensorFlow types. Thread-safety: thread-safe.
#ifndef GRAPHI_TF_CC_PROFILER_GRAPH_PROFILE_H_
#define GRAPHI_TF_CC_PROFILER_GRAPH_PROFILE_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "cc/profiler/cost_model.h"
#include "cc/profiler/step_recorder.h"
#include "cc/profiler/step_timing_sampler.h"
#include "cc/tuning/adoption.h"
#include "cc/tuning/graph_load.h"

namespace graphi {

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
  GraphLoad& load() { return load_; }
  const GraphLoad& load() const { return load_; }
  StepRecorder& recorder() { return recorder_; }

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

  // Records `adoption` for its load class (GraphLoad) and applies its costs
  // if its node names match this graph (returns whether they did).
  bool ApplyAdoption(const Adoption& adoption);

 private:
  const std::string signature_;
  const std::vector<std::string> node_names_;
  const std::vector<std::string> node_types_;
  CostModel costs_;
  StepTimingSampler timing_sampler_;
  std::atomic<int64_t> steps_run_{0};
  std::atomic<int64_t> stock_executor_steps_{0};
  GraphLoad load_;
  StepRecorder recorder_;
};

}  // namespace graphi

#endif  // GRAPHI_TF_CC_PROFILER_GRAPH_PROFILE_H_
