// Executor team layout for the graphi executor.
//
// The executor runs E independent executors ("teams"), each with T worker
// threads pinned to T distinct CPUs. A team owns whole L2 tiles so that teams
// never contend for the same L2 cache, and E x T never exceeds the cores the
// process may use (affinity mask and cgroup quota). E and T come from the
// setting in force (setting_resolver.h); error messages name the
// GRAPHI_EXECUTORS and GRAPHI_THREADS_PER_EXECUTOR settings and the allowed
// range so users can fix them.
//
// Thread-safety: pure functions over a Topology value; thread-compatible.

#ifndef GRAPHI_TF_CC_TEAMS_TEAM_LAYOUT_H_
#define GRAPHI_TF_CC_TEAMS_TEAM_LAYOUT_H_

#include <string>
#include <utility>
#include <vector>

#include "cc/platform/topology.h"
#include "cc/teams/setting.h"

namespace graphi {

struct TeamLayout {
  int executors = 0;
  int threads_per_executor = 0;
  // team_cpus[k] holds the threads_per_executor CPU ids that team k's threads
  // are pinned to (thread i of team k runs on team_cpus[k][i]).
  std::vector<std::vector<int>> team_cpus;
};

// Lays out `executors` teams of `threads_per_executor` threads on `topology`.
//
// Rules:
//   * executors >= 1 and threads_per_executor >= 1;
//   * executors * threads_per_executor <= UsableCores(topology);
//   * team k takes the next consecutive tiles (in topology.tiles order) until
//     they hold at least threads_per_executor CPUs, and uses the first
//     threads_per_executor of those CPUs; leftover CPUs of its last tile stay
//     idle, because a tile is never shared between two teams;
//   * running out of tiles is an error.
//
// On success fills *out and returns true. On failure returns false and sets
// *error (if non-null) to a message naming the offending setting and the
// allowed range.
bool BuildTeamLayout(const Topology& topology, int executors,
                     int threads_per_executor, TeamLayout* out,
                     std::string* error);

// The default setting: one team per L2 tile, each using the whole tile.
// T = size of the first tile (clamped to [1, UsableCores]); E = the number of
// teams of T threads that BuildTeamLayout accepts (at least 1). On a machine
// with 68 CPUs in 2-CPU tiles this is 34 x 2; with 2 CPUs in 1-CPU tiles 2 x 1.
// When the topology has no usable cores this yields 1 x 1, which
// BuildTeamLayout then rejects with an explanatory error.
Setting DefaultSetting(const Topology& topology);

// Every (executors, threads_per_executor) pair that BuildTeamLayout accepts on
// `topology`, for T in 1..UsableCores and E in 1..UsableCores/T, sorted by
// (E, T). Useful for sweeping settings in benchmarks and tests.
std::vector<Setting> SymmetricSettings(const Topology& topology);

// The layouts the autotuner and graphi_tf.tune compare on `topology`, sorted
// by (E, T): for each team size T in {1, tile, 2 x tile, 4 x tile, ...} up to
// UsableCores, as many teams of T as BuildTeamLayout accepts (layouts that use
// the whole machine), plus 1 x 1. Always contains DefaultSetting. On 2 one-CPU
// tiles: 1x1, 1x2, 2x1; on 16: 1x1, 1x16, 2x8, 4x4, 8x2, 16x1. All symmetric
// settings would be 50 on 16 cores, more than a few seconds of exploration
// can visit (docs/design.md, "Manycore").
std::vector<Setting> TuningCandidates(const Topology& topology);

// The stock points (setting.h) the online autotuner also compares on
// `topology`, with N usable cores: TensorFlow's executor on N inter-op
// threads of single-threaded kernels (stock:Nx1, the best stock setting for
// graphs of many small parallel ops) and on 1 inter-op thread with N intra-op
// threads (stock:1xN, for chains of large ops); with N >= 8 also the split in
// between (stock:(N/4)x4). None below 2 cores. Few on purpose: each costs its
// visits in every exploration.
std::vector<Setting> StockPointCandidates(const Topology& topology);

}  // namespace graphi

#endif  // GRAPHI_TF_CC_TEAMS_TEAM_LAYOUT_H_
