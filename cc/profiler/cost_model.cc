#include "cc/profiler/cost_model.h"

#include <algorithm>

namespace graphi {

CostModel::CostModel(std::vector<std::vector<int>> successors)
    : successors_(std::move(successors)),
      estimates_(new std::atomic<int64_t>[successors_.size()]),
      ranks_(new std::atomic<int64_t>[successors_.size()]) {
  for (size_t i = 0; i < successors_.size(); ++i) {
    estimates_[i].store(kUnknown, std::memory_order_relaxed);
    ranks_[i].store(0, std::memory_order_relaxed);
  }
}

void CostModel::Record(int node_id, int64_t elapsed_ns) {
  if (elapsed_ns < 0) elapsed_ns = 0;
  std::atomic<int64_t>& slot = estimates_[node_id];
  const int64_t old = slot.load(std::memory_order_relaxed);
  // A sample under half the estimate replaces it: one-off slow runs (a
  // kernel's first run builds primitives, caches are cold) are always high,
  // so a fast sample means the estimate was polluted.
  const bool reset = old < 0 || elapsed_ns < old / 2;
  slot.store(reset ? elapsed_ns : old + (elapsed_ns - old) / 8, std::memory_order_relaxed);
}

std::vector<int64_t> CostModel::Estimates() const {
  std::vector<int64_t> out(successors_.size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = Estimate(static_cast<int>(i));
  return out;
}

int64_t CostModel::MeanEstimate() const {
  int64_t sum = 0;
  int64_t known = 0;
  for (size_t i = 0; i < successors_.size(); ++i) {
    const int64_t e = Estimate(static_cast<int>(i));
    if (e < 0) continue;
    sum += e;
    ++known;
  }
  return known == 0 ? kUnknown : sum / known;
}

bool CostModel::SetEstimates(const std::vector<int64_t>& estimates_ns) {
  if (estimates_ns.size() != successors_.size()) return false;
  for (size_t i = 0; i < estimates_ns.size(); ++i) {
    estimates_[i].store(estimates_ns[i] < 0 ? kUnknown : estimates_ns[i],
                        std::memory_order_relaxed);
  }
  return true;
}

std::vector<int64_t> CostModel::UpwardRanks(const std::vector<std::vector<int>>& successors,
                                            const std::vector<int64_t>& cost_ns) {
  const int n = static_cast<int>(successors.size());
  auto cost = [&](int v) { return std::max<int64_t>(cost_ns[v], 0); };
  // Reverse topological order via Kahn's algorithm on out-degrees: a node's
  // rank is final once all its successors' ranks are.
  std::vector<int> remaining(n);
  std::vector<std::vector<int>> predecessors(n);
  for (int v = 0; v < n; ++v) {
    remaining[v] = static_cast<int>(successors[v].size());
    for (int s : successors[v]) predecessors[s].push_back(v);
  }
  std::vector<int64_t> rank(n, 0);
  std::vector<int> ready;
  for (int v = 0; v < n; ++v) {
    if (remaining[v] == 0) ready.push_back(v);
  }
  std::vector<bool> done(n, false);
  while (!ready.empty()) {
    const int v = ready.back();
    ready.pop_back();
    int64_t best = 0;
    for (int s : successors[v]) best = std::max(best, rank[s]);
    rank[v] = cost(v) + best;
    done[v] = true;
    for (int p : predecessors[v]) {
      if (--remaining[p] == 0) ready.push_back(p);
    }
  }
  for (int v = 0; v < n; ++v) {
    if (!done[v]) rank[v] = cost(v);
  }
  return rank;
}

void CostModel::RefreshRanks() {
  const std::vector<int64_t> ranks = UpwardRanks(successors_, Estimates());
  for (size_t i = 0; i < ranks.size(); ++i) ranks_[i].store(ranks[i], std::memory_order_relaxed);
  ranks_published_.store(true, std::memory_order_release);
}

int64_t CostModel::Rank(int node_id) const {
  return ranks_[node_id].load(std::memory_order_relaxed);
}

std::vector<int64_t> CostModel::Ranks() const {
  std::vector<int64_t> out(successors_.size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = Rank(static_cast<int>(i));
  return out;
}

}  // namespace graphi
