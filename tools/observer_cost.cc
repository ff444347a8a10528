// Cost of the profiler's per-node hook, measured in isolation.
//
// Per executed node, a step that profiles reads the monotonic clock twice and
// records the elapsed time into the CostModel (GraphiStep::ProcessSync). This
// times exactly that sequence over a model the size of the 4-layer LSTM step,
// so the profiler's overhead per step is (nodes per step) x (ns per node).
//
// Build and run (from the repository root):
//   g++ -std=c++17 -O2 -I. tools/observer_cost.cc cc/profiler/cost_model.cc -o /tmp/observer_cost
//   /tmp/observer_cost [num_nodes] [iterations]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "cc/profiler/cost_model.h"

int main(int argc, char** argv) {
  const int nodes = argc > 1 ? std::atoi(argv[1]) : 3131;
  const long iterations = argc > 2 ? std::atol(argv[2]) : 20000000;
  graphi::CostModel model(std::vector<std::vector<int>>(static_cast<size_t>(nodes)));
  auto now = [] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  };
  const auto begin = std::chrono::steady_clock::now();
  int node = 0;
  for (long i = 0; i < iterations; ++i) {
    const int64_t start = now();
    const int64_t end = now();  // the kernel would run between the two reads
    model.OnNodeExecuted(node, 0, /*merged=*/false, start, end);
    if (++node == nodes) node = 0;
  }
  const double total_ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - begin).count();
  const double per_node = total_ns / static_cast<double>(iterations);
  std::printf("profiler hook: %.1f ns per node; %d nodes per step -> %.3f ms per step\n",
              per_node, nodes, per_node * nodes / 1e6);
  return 0;
}
