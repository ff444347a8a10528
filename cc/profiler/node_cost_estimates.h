// Per-node running cost estimates, measured on the executor's own clock.
//
// The executor records the wall time of every kernel it runs; the estimate
// is an exponentially decayed mean (weight 1/8 for the newest sample), which
// follows a node whose cost drifts (shapes, caches warming) without being
// thrown by a single outlier. The executor uses it to decide which ready ops
// are cheap enough to run inline on the thread that made them ready.
//
// Free of TensorFlow types. Thread-safety: thread-safe; estimates are
// relaxed atomics (a racing update may drop a sample, which is harmless).
#ifndef GRAPHI_TF_CC_PROFILER_NODE_COST_ESTIMATES_H_
#define GRAPHI_TF_CC_PROFILER_NODE_COST_ESTIMATES_H_

#include <atomic>
#include <cstdint>
#include <memory>

namespace graphi {

class NodeCostEstimates {
 public:
  static constexpr int64_t kUnknown = -1;

  explicit NodeCostEstimates(int num_nodes)
      : num_nodes_(num_nodes), ns_(new std::atomic<int64_t>[num_nodes]) {
    for (int i = 0; i < num_nodes; ++i) ns_[i].store(kUnknown, std::memory_order_relaxed);
  }

  int num_nodes() const { return num_nodes_; }

  void Record(int node_id, int64_t elapsed_ns) {
    std::atomic<int64_t>& slot = ns_[node_id];
    const int64_t old = slot.load(std::memory_order_relaxed);
    slot.store(old < 0 ? elapsed_ns : old + (elapsed_ns - old) / 8,
               std::memory_order_relaxed);
  }

  // Nanoseconds, or kUnknown before the first run.
  int64_t Estimate(int node_id) const {
    return ns_[node_id].load(std::memory_order_relaxed);
  }

 private:
  const int num_nodes_;
  std::unique_ptr<std::atomic<int64_t>[]> ns_;
};

}  // namespace graphi

#endif  // GRAPHI_TF_CC_PROFILER_NODE_COST_ESTIMATES_H_
