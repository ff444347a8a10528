// Executor team layout for the graphi executor. See team_layout.h.
//
// Thread-safety: pure functions, no global state; thread-compatible.

#include "cc/teams/team_layout.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "cc/platform/topology.h"

namespace graphi {
namespace {

constexpr char kExecutorsSetting[] = "GRAPHI_EXECUTORS";
constexpr char kThreadsSetting[] = "GRAPHI_THREADS_PER_EXECUTOR";

// Places up to `max_teams` teams of `threads` CPUs on consecutive whole tiles
// and returns how many fit. When `team_cpus` is non-null it receives the CPUs
// of each placed team. This greedy walk is the single definition of "fits"
// shared by BuildTeamLayout, DefaultSetting and SymmetricSettings, so the
// three can never disagree.
int PlaceTeams(const Topology& topology, int max_teams, int threads,
               std::vector<std::vector<int>>* team_cpus) {
  int placed = 0;
  size_t next_tile = 0;
  while (placed < max_teams && next_tile < topology.tiles.size()) {
    std::vector<int> cpus;
    while (static_cast<int>(cpus.size()) < threads &&
           next_tile < topology.tiles.size()) {
      const std::vector<int>& tile = topology.tiles[next_tile++];
      cpus.insert(cpus.end(), tile.begin(), tile.end());
    }
    if (static_cast<int>(cpus.size()) < threads) break;  // Out of tiles.
    cpus.resize(threads);
    if (team_cpus != nullptr) team_cpus->push_back(std::move(cpus));
    ++placed;
  }
  return placed;
}

// Most teams of `threads` threads that satisfy both the tile rule and the
// E x T <= UsableCores bound.
int MaxTeams(const Topology& topology, int threads) {
  const int cores = UsableCores(topology);
  if (threads < 1 || threads > cores) return 0;
  const int by_cores = cores / threads;
  return PlaceTeams(topology, by_cores, threads, nullptr);
}

// Describes the tile sizes for error messages: "2 cpus" or "1-4 cpus".
std::string DescribeTileSize(const Topology& topology) {
  size_t smallest = std::numeric_limits<size_t>::max();
  size_t largest = 0;
  for (const std::vector<int>& tile : topology.tiles) {
    smallest = std::min(smallest, tile.size());
    largest = std::max(largest, tile.size());
  }
  if (topology.tiles.empty()) return "0 cpus";
  std::string text = std::to_string(smallest);
  if (largest != smallest) text += "-" + std::to_string(largest);
  return text + (largest == 1 ? " cpu" : " cpus");
}

// Tiles that `executors` teams of `threads` would need. Exact when all tiles
// have one size; with mixed sizes the shortfall is estimated with the largest
// tile, so the result is a lower bound (flagged through *exact).
int64_t TilesNeeded(const Topology& topology, int executors, int threads,
                    bool* exact) {
  size_t smallest = std::numeric_limits<size_t>::max();
  size_t largest = 1;
  for (const std::vector<int>& tile : topology.tiles) {
    smallest = std::min(smallest, tile.size());
    largest = std::max(largest, tile.size());
  }
  *exact = topology.tiles.empty() || smallest == largest;
  const int64_t per_team =
      (static_cast<int64_t>(threads) + static_cast<int64_t>(largest) - 1) /
      static_cast<int64_t>(largest);
  if (*exact) return per_team * executors;

  // Walk the real tiles as PlaceTeams does, then assume largest-size tiles
  // for the teams that did not fit.
  int64_t tiles_used = 0;
  int placed = 0;
  size_t next_tile = 0;
  while (placed < executors && next_tile < topology.tiles.size()) {
    size_t cpus = 0;
    size_t start = next_tile;
    while (cpus < static_cast<size_t>(threads) &&
           next_tile < topology.tiles.size()) {
      cpus += topology.tiles[next_tile++].size();
    }
    if (cpus < static_cast<size_t>(threads)) {
      next_tile = start;
      break;
    }
    tiles_used = static_cast<int64_t>(next_tile);
    ++placed;
  }
  return tiles_used + per_team * (executors - placed);
}

// "1 team", "4 teams": keeps the messages grammatical for small settings.
std::string Count(int64_t n, const std::string& noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

std::string RangeError(const char* setting, int value, int cores) {
  return std::string(setting) + " = " + std::to_string(value) +
         " is invalid; allowed: 1 <= " + setting + " <= " +
         std::to_string(std::max(cores, 1));
}

// The layout needs more whole L2 tiles than the machine has.
std::string TilesError(const Topology& topology, int executors, int threads_per_executor) {
  bool exact = true;
  const int64_t needed = TilesNeeded(topology, executors, threads_per_executor, &exact);
  const int max_teams = MaxTeams(topology, threads_per_executor);
  std::string err = std::string(kExecutorsSetting) + " x " + kThreadsSetting + " = " +
                    std::to_string(executors) + " x " + std::to_string(threads_per_executor) +
                    " does not fit on whole L2 tiles (a tile is never shared between "
                    "teams): " +
                    Count(executors, "team") + " of " + Count(threads_per_executor, "thread") +
                    " need " + (exact ? "" : "at least ") + Count(needed, "tile") + " of " +
                    DescribeTileSize(topology) + ", but only " +
                    Count(static_cast<int64_t>(topology.tiles.size()), "tile") +
                    (topology.tiles.size() == 1 ? " is" : " are") + " available";
  if (max_teams > 0) {
    err += "; allowed: " + std::string(kExecutorsSetting) + " <= " + std::to_string(max_teams) +
           " for " + kThreadsSetting + " = " + std::to_string(threads_per_executor);
  } else {
    err += "; allowed: no team of " + Count(threads_per_executor, "thread") + " fits, lower " +
           kThreadsSetting;
  }
  return err;
}

}  // namespace

bool BuildTeamLayout(const Topology& topology, int executors,
                     int threads_per_executor, TeamLayout* out,
                     std::string* error) {
  std::string local_error;
  std::string* err = error != nullptr ? error : &local_error;
  const int cores = UsableCores(topology);

  if (executors < 1) {
    *err = RangeError(kExecutorsSetting, executors, cores);
    return false;
  }
  if (threads_per_executor < 1) {
    *err = RangeError(kThreadsSetting, threads_per_executor, cores);
    return false;
  }
  if (cores < 1) {
    *err = "no usable cores (affinity " +
           FormatCpuList(topology.usable_cpus) + ", cgroup quota " +
           std::to_string(topology.quota_cores) + "); cannot place " +
           kExecutorsSetting + " x " + kThreadsSetting + " = " +
           std::to_string(executors) + " x " +
           std::to_string(threads_per_executor);
    return false;
  }

  // 64-bit product: large settings must be rejected, not wrap around.
  const int64_t total =
      static_cast<int64_t>(executors) * static_cast<int64_t>(threads_per_executor);
  if (total > cores) {
    *err = std::string(kExecutorsSetting) + " x " + kThreadsSetting + " = " +
           std::to_string(executors) + " x " +
           std::to_string(threads_per_executor) + " = " +
           std::to_string(total) + " exceeds the " + std::to_string(cores) +
           " usable cores (affinity " + FormatCpuList(topology.usable_cpus) +
           ", cgroup quota " + std::to_string(topology.quota_cores) +
           "); allowed: executors * threads_per_executor <= " +
           std::to_string(cores);
    return false;
  }

  std::vector<std::vector<int>> team_cpus;
  const int placed =
      PlaceTeams(topology, executors, threads_per_executor, &team_cpus);
  if (placed < executors) {
    *err = TilesError(topology, executors, threads_per_executor);
    return false;
  }

  out->executors = executors;
  out->threads_per_executor = threads_per_executor;
  out->team_cpus = std::move(team_cpus);
  return true;
}

Setting DefaultSetting(const Topology& topology) {
  const int cores = UsableCores(topology);
  int threads = topology.tiles.empty()
                    ? 1
                    : static_cast<int>(topology.tiles.front().size());
  threads = std::max(1, std::min(threads, cores));
  return TeamsSetting(std::max(1, MaxTeams(topology, threads)), threads);
}

std::vector<Setting> SymmetricSettings(const Topology& topology) {
  std::vector<Setting> settings;
  const int cores = UsableCores(topology);
  for (int threads = 1; threads <= cores; ++threads) {
    // Teams are placed greedily in order, so if E teams fit then every
    // smaller E fits as well: one MaxTeams call covers all E for this T.
    const int max_teams = MaxTeams(topology, threads);
    for (int executors = 1; executors <= max_teams; ++executors) {
      settings.push_back(TeamsSetting(executors, threads));
    }
  }
  std::sort(settings.begin(), settings.end());
  return settings;
}

std::vector<Setting> TuningCandidates(const Topology& topology) {
  const int cores = UsableCores(topology);
  std::vector<Setting> out;
  auto add = [&out](int executors, int threads) {
    const Setting s = TeamsSetting(executors, threads);
    if (executors >= 1 && std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
  };
  if (cores < 1) return out;
  add(1, 1);
  add(MaxTeams(topology, 1), 1);
  int tile = topology.tiles.empty() ? 1 : static_cast<int>(topology.tiles.front().size());
  tile = std::max(1, std::min(tile, cores));
  // T = tile is DefaultSetting's team size, with as many teams as fit: the
  // default is among these.
  for (int threads = tile; threads <= cores; threads *= 2) {
    add(MaxTeams(topology, threads), threads);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<Setting> StockPointCandidates(const Topology& topology) {
  const int cores = UsableCores(topology);
  std::vector<Setting> out;
  if (cores < 2) return out;
  out.push_back(StockPointSetting(cores, 1));
  if (cores >= 8) out.push_back(StockPointSetting(cores / 4, 4));
  out.push_back(StockPointSetting(1, cores));
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace graphi
