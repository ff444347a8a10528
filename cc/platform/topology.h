// CPU topology discovery for the graphi executor.
//
// Reads which CPUs this process may run on (online CPUs intersected with the
// scheduler affinity mask), how they group into L2-sharing "tiles", how many
// cores the cgroup CPU quota allows, and the CPU model name. The executor uses
// this to lay out its thread teams (see team_layout.h).
//
// All data comes from files under configurable roots (see TopologySources) so
// that tests can point discovery at a fake sysfs/cgroup/proc tree.
//
// Thread-safety: these are pure functions over their arguments and the
// filesystem; they keep no global state and are thread-compatible. A Topology
// is a plain value type.

#ifndef GRAPHI_TF_CC_PLATFORM_TOPOLOGY_H_
#define GRAPHI_TF_CC_PLATFORM_TOPOLOGY_H_

#include <string>
#include <vector>

namespace graphi {

struct Topology {
  // Groups of usable CPU ids that share one L2 cache. Only usable CPUs appear;
  // each tile is sorted ascending and tiles are sorted by their first CPU.
  // Every usable CPU is in exactly one tile.
  std::vector<std::vector<int>> tiles;

  // Online CPUs intersected with the affinity mask, sorted ascending.
  std::vector<int> usable_cpus;

  // Whole cores the cgroup CPU quota allows (floor, at least 1). Equal to
  // usable_cpus.size() when there is no quota. Values <= 0 are treated as
  // "no quota" by UsableCores().
  int quota_cores = 0;

  // The "model name" from cpuinfo; empty when unknown.
  std::string cpu_model;
};

// Where DiscoverTopology reads from. Defaults are the real system locations.
struct TopologySources {
  std::string sysfs_root = "/sys";
  // The process's cgroup directory: cgroup v2 has cpu.max directly in it,
  // cgroup v1 has cpu/cpu.cfs_quota_us and cpu/cpu.cfs_period_us below it.
  std::string cgroup_root = "/sys/fs/cgroup";
  std::string proc_root = "/proc";
  // CPU ids the process may run on; empty means sched_getaffinity(0).
  std::vector<int> affinity;
};

// Fills *out from the given sources. Returns false and sets *error (if
// non-null) when a required file is unreadable, a file has malformed content
// (the message names the file and the offending text), or no CPU is usable.
// Missing cgroup files mean "no quota"; missing cache info means one tile per
// CPU; a missing cpuinfo means an empty cpu_model.
bool DiscoverTopology(const TopologySources& sources, Topology* out,
                      std::string* error);

// Parses the kernel's cpulist format ("0-3,8,10-11"; surrounding whitespace
// allowed, empty text means no CPUs) into sorted, de-duplicated ids. Returns
// false on malformed text, leaving *cpus unspecified.
bool ParseCpuList(const std::string& text, std::vector<int>* cpus);

// Formats CPU ids in cpulist format, compressing runs into ranges
// ({0,1,2,3,8} -> "0-3,8"). Input order and duplicates do not matter.
std::string FormatCpuList(const std::vector<int>& cpus);

// Cores the executor may keep busy at once:
// min(usable_cpus.size(), quota_cores), with quota_cores <= 0 meaning no quota.
int UsableCores(const Topology& topology);

}  // namespace graphi

#endif  // GRAPHI_TF_CC_PLATFORM_TOPOLOGY_H_
