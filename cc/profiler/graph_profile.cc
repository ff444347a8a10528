#include "cc/profiler/graph_profile.h"

#include <utility>

#include "cc/util/clock.h"

namespace graphi {

GraphProfile::GraphProfile(std::string signature, std::vector<std::string> node_names,
                           std::vector<std::vector<int>> successors,
                           std::vector<std::string> node_types)
    : signature_(std::move(signature)),
      node_names_(std::move(node_names)),
      node_types_(std::move(node_types)),
      costs_(std::move(successors)) {}

bool GraphProfile::TakeTimingTurn() {
  int64_t step = 0;
  const bool turn = timing_sampler_.TakeTurn(&step);
  if (step == timing_sampler_.timed_warmup_steps()) {
    timing_sampler_.set_stride(StrideForOpCost(costs_.MeanEstimate(), ClockReadCostNs()));
  }
  return turn;
}

void GraphProfile::StepFinished() {
  const int64_t n = steps_run_.fetch_add(1, std::memory_order_relaxed) + 1;
  const bool power_of_two = (n & (n - 1)) == 0;
  if ((power_of_two && n <= 1024) || n % 256 == 0) costs_.RefreshRanks();
}

bool GraphProfile::ApplyAdoption(const Adoption& adoption) {
  bool applied_costs = false;
  if (adoption.node_names == node_names_ && costs_.SetEstimates(adoption.node_costs_ns)) {
    costs_.RefreshRanks();
    applied_costs = true;
  }
  load_.Adopt(adoption);
  return applied_costs;
}

}  // namespace graphi
