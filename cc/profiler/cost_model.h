// Per-graph cost model: robust per-node cost estimates and upward ranks.
//
// Estimates: every execution of a node's kernel is recorded (through the
// ExecutionObserver interface); the estimate is an exponentially decayed
// mean with weight 1/8 for the newest sample, which follows a node whose cost
// drifts (caches warming, shapes) without being thrown by one outlier; a
// sample under half the estimate replaces it, so a slow first run (oneDNN
// primitive creation, cold caches) is forgotten at the first normal one. A node
// inside a loop is recorded once per iteration, so its estimate is a
// per-iteration cost.
//
// Upward rank (paper §4.3): rank(n) = cost(n) + max over successors s of
// rank(s) — the remaining critical-path time from n to the sink. Ranks are
// computed on the static graph: loop back edges (out of NextIteration nodes)
// are left out by the caller, so a loop body counts once, with its
// per-iteration costs. Nodes never executed count 0.
//
// Ranks are recomputed from the current estimates by RefreshRanks() (O(V+E))
// and stored in an array of atomics, so Rank() is a lock-free read on the
// scheduling path.
//
// Free of TensorFlow types. Thread-safety: thread-safe. Estimates and ranks
// are relaxed atomics: a racing Record() may drop a sample, and a reader
// during RefreshRanks() may see some old and some new ranks — both harmless
// for a scheduling heuristic. costs_known() is release/acquire so a reader
// that sees it true also sees the first ranks.
#ifndef GRAPHI_TF_CC_PROFILER_COST_MODEL_H_
#define GRAPHI_TF_CC_PROFILER_COST_MODEL_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "cc/profiler/execution_observer.h"

namespace graphi {

class CostModel final : public ExecutionObserver {
 public:
  static constexpr int64_t kUnknown = -1;

  // successors[n] = nodes that depend on n (data or control), loop back
  // edges excluded.
  explicit CostModel(std::vector<std::vector<int>> successors);

  int num_nodes() const { return static_cast<int>(successors_.size()); }
  // The static DAG the ranks are computed on.
  const std::vector<std::vector<int>>& successors() const { return successors_; }

  void Record(int node_id, int64_t elapsed_ns);
  void OnNodeExecuted(int node_id, int team, bool /*shared*/, int64_t start_ns,
                      int64_t end_ns) override {
    Record(node_id, end_ns - start_ns);
  }

  // Nanoseconds, or kUnknown before the node first ran.
  int64_t Estimate(int node_id) const {
    return estimates_[node_id].load(std::memory_order_relaxed);
  }
  std::vector<int64_t> Estimates() const;
  // The mean estimate over the nodes that have one (ns); kUnknown if none.
  int64_t MeanEstimate() const;
  // Replaces the estimates (e.g. from the cache). Returns false, changing
  // nothing, if the size does not match the graph.
  bool SetEstimates(const std::vector<int64_t>& estimates_ns);

  // Recomputes ranks from the current estimates and publishes them.
  void RefreshRanks();
  // The published rank of a node; 0 before the first RefreshRanks().
  int64_t Rank(int node_id) const;
  // Whether ranks have been published from measured or cached costs.
  bool costs_known() const { return ranks_published_.load(std::memory_order_acquire); }
  std::vector<int64_t> Ranks() const;

  // rank(n) = cost(n) + max(rank(successors)); nodes on a cycle (which the
  // caller should have broken) get their own cost. Exposed for tests.
  static std::vector<int64_t> UpwardRanks(const std::vector<std::vector<int>>& successors,
                                          const std::vector<int64_t>& cost_ns);

 private:
  const std::vector<std::vector<int>> successors_;
  std::unique_ptr<std::atomic<int64_t>[]> estimates_;
  std::unique_ptr<std::atomic<int64_t>[]> ranks_;
  std::atomic<bool> ranks_published_{false};
};

}  // namespace graphi

#endif  // GRAPHI_TF_CC_PROFILER_COST_MODEL_H_
