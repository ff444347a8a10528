// CPU topology discovery for the graphi executor. See topology.h.
//
// Thread-safety: pure functions, no global state; thread-compatible.

#include "cc/platform/topology.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <limits>
#include <set>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

namespace graphi {
namespace {

// Largest CPU id accepted from a cpulist. The kernel's NR_CPUS tops out far
// below this; the bound keeps a corrupt range like "0-4000000000" from
// expanding into a huge vector.
constexpr int kMaxCpuId = 1 << 20;

// Upper bound on the cpu_set_t size tried when asking for the affinity mask.
constexpr int kMaxAffinityCpus = 1 << 20;

// The period the kernel assumes when cpu.max lists only a quota.
constexpr int64_t kDefaultCfsPeriodUs = 100000;

enum class ReadStatus { kOk, kMissing, kError };

// Reads a whole file. Missing files (ENOENT/ENOTDIR) are reported separately
// from other failures because several inputs are optional.
ReadStatus ReadFile(const std::string& path, std::string* contents,
                    std::string* error) {
  contents->clear();
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    if (err == ENOENT || err == ENOTDIR) return ReadStatus::kMissing;
    *error = "cannot open " + path + ": " + std::strerror(err);
    return ReadStatus::kError;
  }
  char buffer[4096];
  for (;;) {
    ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n > 0) {
      contents->append(buffer, static_cast<size_t>(n));
      continue;
    }
    if (n == 0) break;
    if (errno == EINTR) continue;
    int err = errno;
    close(fd);
    *error = "cannot read " + path + ": " + std::strerror(err);
    return ReadStatus::kError;
  }
  close(fd);
  return ReadStatus::kOk;
}

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' ||
         c == '\f';
}

std::string Trim(const std::string& text) {
  size_t begin = 0;
  size_t end = text.size();
  while (begin < end && IsSpace(text[begin])) ++begin;
  while (end > begin && IsSpace(text[end - 1])) --end;
  return text.substr(begin, end - begin);
}

std::vector<std::string> SplitWhitespace(const std::string& text) {
  std::vector<std::string> fields;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && IsSpace(text[i])) ++i;
    size_t start = i;
    while (i < text.size() && !IsSpace(text[i])) ++i;
    if (i > start) fields.push_back(text.substr(start, i - start));
  }
  return fields;
}

// Strict decimal parse: optional leading '-', digits only, no overflow.
bool ParseInt64(const std::string& text, int64_t* value) {
  if (text.empty()) return false;
  size_t i = 0;
  bool negative = false;
  if (text[0] == '-') {
    negative = true;
    i = 1;
    if (text.size() == 1) return false;
  }
  int64_t result = 0;
  for (; i < text.size(); ++i) {
    char c = text[i];
    if (c < '0' || c > '9') return false;
    int digit = c - '0';
    if (result > (std::numeric_limits<int64_t>::max() - digit) / 10) {
      return false;
    }
    result = result * 10 + digit;
  }
  *value = negative ? -result : result;
  return true;
}

// Parses one non-negative CPU id ("17"); rejects signs and out-of-range ids.
bool ParseCpuId(const std::string& text, int* cpu) {
  if (text.empty() || text[0] == '-') return false;
  int64_t value = 0;
  if (!ParseInt64(text, &value) || value > kMaxCpuId) return false;
  *cpu = static_cast<int>(value);
  return true;
}

std::string MalformedError(const std::string& path, const std::string& text,
                           const std::string& expected) {
  return "malformed " + path + ": \"" + Trim(text) + "\" (expected " +
         expected + ")";
}

std::string CpuDir(const TopologySources& sources, int cpu) {
  return sources.sysfs_root + "/devices/system/cpu/cpu" + std::to_string(cpu);
}

bool ReadOnlineCpus(const TopologySources& sources, std::vector<int>* online,
                    std::string* error) {
  const std::string path = sources.sysfs_root + "/devices/system/cpu/online";
  std::string text;
  switch (ReadFile(path, &text, error)) {
    case ReadStatus::kOk:
      break;
    case ReadStatus::kMissing:
      *error = "cannot read " + path + ": " + std::strerror(ENOENT);
      return false;
    case ReadStatus::kError:
      return false;
  }
  if (!ParseCpuList(text, online)) {
    *error = MalformedError(path, text, "a cpu list like \"0-3,8\"");
    return false;
  }
  if (online->empty()) {
    *error = "no online CPUs listed in " + path;
    return false;
  }
  return true;
}

// Returns the CPUs in this process's scheduler affinity mask. The mask may be
// wider than the default cpu_set_t on very large machines, so grow the set
// until the kernel accepts it.
bool ReadAffinity(std::vector<int>* cpus, std::string* error) {
  for (int size = CPU_SETSIZE; size <= kMaxAffinityCpus; size *= 2) {
    cpu_set_t* set = CPU_ALLOC(size);
    if (set == nullptr) {
      *error = "cannot allocate a cpu set for sched_getaffinity";
      return false;
    }
    const size_t bytes = CPU_ALLOC_SIZE(size);
    CPU_ZERO_S(bytes, set);
    if (sched_getaffinity(0, bytes, set) == 0) {
      cpus->clear();
      for (int cpu = 0; cpu < size; ++cpu) {
        if (CPU_ISSET_S(cpu, bytes, set)) cpus->push_back(cpu);
      }
      CPU_FREE(set);
      return true;
    }
    int err = errno;
    CPU_FREE(set);
    if (err != EINVAL) {
      *error = std::string("sched_getaffinity failed: ") + std::strerror(err);
      return false;
    }
  }
  *error = "sched_getaffinity failed: affinity mask wider than " +
           std::to_string(kMaxAffinityCpus) + " CPUs";
  return false;
}

// cgroup v2: "<quota> <period>" or "max <period>" in <cgroup_root>/cpu.max.
// Sets *found to false when the file does not exist.
bool ReadCgroupV2Quota(const TopologySources& sources, bool* found,
                       int64_t* quota_cores, std::string* error) {
  const std::string path = sources.cgroup_root + "/cpu.max";
  std::string text;
  switch (ReadFile(path, &text, error)) {
    case ReadStatus::kOk:
      break;
    case ReadStatus::kMissing:
      *found = false;
      return true;
    case ReadStatus::kError:
      return false;
  }
  *found = true;
  const std::vector<std::string> fields = SplitWhitespace(text);
  const std::string expected = "\"max <period>\" or \"<quota> <period>\"";
  if (fields.empty() || fields.size() > 2) {
    *error = MalformedError(path, text, expected);
    return false;
  }
  int64_t period = kDefaultCfsPeriodUs;
  if (fields.size() == 2 && (!ParseInt64(fields[1], &period) || period <= 0)) {
    *error = MalformedError(path, text, expected);
    return false;
  }
  if (fields[0] == "max") {
    *quota_cores = -1;
    return true;
  }
  int64_t quota = 0;
  if (!ParseInt64(fields[0], &quota) || quota <= 0) {
    *error = MalformedError(path, text, expected);
    return false;
  }
  *quota_cores = std::max<int64_t>(1, quota / period);
  return true;
}

// Reads one integer from a cgroup v1 file; *found is false if it is missing.
bool ReadCgroupV1Value(const std::string& path, bool* found, int64_t* value,
                       std::string* error) {
  std::string text;
  switch (ReadFile(path, &text, error)) {
    case ReadStatus::kOk:
      break;
    case ReadStatus::kMissing:
      *found = false;
      return true;
    case ReadStatus::kError:
      return false;
  }
  *found = true;
  if (!ParseInt64(Trim(text), value)) {
    *error = MalformedError(path, text, "an integer");
    return false;
  }
  return true;
}

// cgroup v1: cpu/cpu.cfs_quota_us (-1 = unlimited) over cpu/cpu.cfs_period_us.
bool ReadCgroupV1Quota(const TopologySources& sources, int64_t* quota_cores,
                       std::string* error) {
  const std::string quota_path = sources.cgroup_root + "/cpu/cpu.cfs_quota_us";
  const std::string period_path =
      sources.cgroup_root + "/cpu/cpu.cfs_period_us";
  bool found = false;
  int64_t quota = 0;
  if (!ReadCgroupV1Value(quota_path, &found, &quota, error)) return false;
  if (!found || quota < 0) {
    *quota_cores = -1;
    return true;
  }
  if (quota == 0) {
    *error = MalformedError(quota_path, "0", "-1 or a positive quota");
    return false;
  }
  int64_t period = 0;
  if (!ReadCgroupV1Value(period_path, &found, &period, error)) return false;
  if (!found) {
    // A quota without a period cannot be interpreted; treat it like a
    // missing quota rather than guessing a period.
    *quota_cores = -1;
    return true;
  }
  if (period <= 0) {
    *error = MalformedError(period_path, std::to_string(period),
                            "a positive period");
    return false;
  }
  *quota_cores = std::max<int64_t>(1, quota / period);
  return true;
}

// Sets *quota_cores to the whole cores the quota allows, or -1 if unlimited.
// cgroup v2 wins when both interfaces are visible, since a v2 cpu.max is
// authoritative for the unified hierarchy.
bool ReadQuotaCores(const TopologySources& sources, int64_t* quota_cores,
                    std::string* error) {
  bool found_v2 = false;
  if (!ReadCgroupV2Quota(sources, &found_v2, quota_cores, error)) return false;
  if (found_v2) return true;
  return ReadCgroupV1Quota(sources, quota_cores, error);
}

std::string ReadCpuModel(const TopologySources& sources) {
  std::string text;
  std::string ignored;
  if (ReadFile(sources.proc_root + "/cpuinfo", &text, &ignored) !=
      ReadStatus::kOk) {
    return "";
  }
  size_t line_start = 0;
  while (line_start < text.size()) {
    size_t line_end = text.find('\n', line_start);
    if (line_end == std::string::npos) line_end = text.size();
    const std::string line = text.substr(line_start, line_end - line_start);
    const size_t colon = line.find(':');
    if (colon != std::string::npos && Trim(line.substr(0, colon)) == "model name") {
      return Trim(line.substr(colon + 1));
    }
    line_start = line_end + 1;
  }
  return "";
}

// Finds the shared_cpu_list of `cpu`'s L2 cache. Sets *found to false when
// sysfs has no L2 entry for the CPU (containers and some VMs hide it).
bool ReadL2SharedCpus(const TopologySources& sources, int cpu, bool* found,
                      std::vector<int>* shared, std::string* error) {
  *found = false;
  const std::filesystem::path cache_dir = CpuDir(sources, cpu) + "/cache";
  std::error_code ec;
  std::filesystem::directory_iterator it(cache_dir, ec);
  if (ec) return true;  // No cache directory: no L2 information.

  // Visit index* directories in name order so the choice is deterministic.
  std::vector<std::string> index_dirs;
  for (; it != std::filesystem::directory_iterator(); it.increment(ec)) {
    if (ec) break;
    const std::string name = it->path().filename().string();
    if (name.rfind("index", 0) == 0) index_dirs.push_back(it->path().string());
  }
  std::sort(index_dirs.begin(), index_dirs.end());

  for (const std::string& dir : index_dirs) {
    std::string level_text;
    const std::string level_path = dir + "/level";
    ReadStatus status = ReadFile(level_path, &level_text, error);
    if (status == ReadStatus::kError) return false;
    if (status == ReadStatus::kMissing) continue;
    int64_t level = 0;
    if (!ParseInt64(Trim(level_text), &level)) {
      *error = MalformedError(level_path, level_text, "a cache level number");
      return false;
    }
    if (level != 2) continue;

    // An instruction-only L2 says nothing about where data is shared.
    std::string type_text;
    status = ReadFile(dir + "/type", &type_text, error);
    if (status == ReadStatus::kError) return false;
    if (status == ReadStatus::kOk && Trim(type_text) == "Instruction") continue;

    std::string list_text;
    const std::string list_path = dir + "/shared_cpu_list";
    status = ReadFile(list_path, &list_text, error);
    if (status == ReadStatus::kError) return false;
    if (status == ReadStatus::kMissing) continue;
    if (!ParseCpuList(list_text, shared)) {
      *error = MalformedError(list_path, list_text, "a cpu list like \"0-3,8\"");
      return false;
    }
    *found = true;
    return true;
  }
  return true;
}

// Groups the usable CPUs into L2 tiles. Walking CPUs in ascending order and
// only claiming not-yet-assigned CPUs yields a partition even if sysfs
// reports inconsistent sharing, and produces tiles already sorted by their
// first CPU.
bool BuildTiles(const TopologySources& sources,
                const std::vector<int>& usable_cpus,
                std::vector<std::vector<int>>* tiles, std::string* error) {
  tiles->clear();
  const std::set<int> usable(usable_cpus.begin(), usable_cpus.end());
  std::set<int> assigned;
  for (int cpu : usable_cpus) {
    if (assigned.count(cpu) != 0) continue;
    bool found = false;
    std::vector<int> shared;
    if (!ReadL2SharedCpus(sources, cpu, &found, &shared, error)) return false;
    std::vector<int> tile = {cpu};
    for (int other : shared) {
      if (other != cpu && usable.count(other) != 0 &&
          assigned.count(other) == 0) {
        tile.push_back(other);
      }
    }
    std::sort(tile.begin(), tile.end());
    assigned.insert(tile.begin(), tile.end());
    tiles->push_back(std::move(tile));
  }
  return true;
}

}  // namespace

bool ParseCpuList(const std::string& text, std::vector<int>* cpus) {
  cpus->clear();
  const std::string trimmed = Trim(text);
  if (trimmed.empty()) return true;  // The kernel writes "" for no CPUs.

  std::vector<int> result;
  size_t start = 0;
  while (start <= trimmed.size()) {
    size_t comma = trimmed.find(',', start);
    if (comma == std::string::npos) comma = trimmed.size();
    const std::string item = trimmed.substr(start, comma - start);
    const size_t dash = item.find('-');
    int first = 0;
    int last = 0;
    if (dash == std::string::npos) {
      if (!ParseCpuId(item, &first)) return false;
      last = first;
    } else {
      if (!ParseCpuId(item.substr(0, dash), &first) ||
          !ParseCpuId(item.substr(dash + 1), &last) || last < first) {
        return false;
      }
    }
    for (int cpu = first; cpu <= last; ++cpu) result.push_back(cpu);
    start = comma + 1;
  }
  std::sort(result.begin(), result.end());
  result.erase(std::unique(result.begin(), result.end()), result.end());
  *cpus = std::move(result);
  return true;
}

std::string FormatCpuList(const std::vector<int>& cpus) {
  std::vector<int> sorted = cpus;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());

  std::string result;
  size_t i = 0;
  while (i < sorted.size()) {
    size_t j = i;
    while (j + 1 < sorted.size() && sorted[j + 1] == sorted[j] + 1) ++j;
    if (!result.empty()) result += ',';
    result += std::to_string(sorted[i]);
    if (j > i) result += '-' + std::to_string(sorted[j]);
    i = j + 1;
  }
  return result;
}

int UsableCores(const Topology& topology) {
  const int cpus = static_cast<int>(topology.usable_cpus.size());
  if (topology.quota_cores <= 0) return cpus;
  return std::min(cpus, topology.quota_cores);
}

bool DiscoverTopology(const TopologySources& sources, Topology* out,
                      std::string* error) {
  std::string local_error;
  std::string* err = error != nullptr ? error : &local_error;

  std::vector<int> online;
  if (!ReadOnlineCpus(sources, &online, err)) return false;

  std::vector<int> affinity = sources.affinity;
  if (affinity.empty() && !ReadAffinity(&affinity, err)) return false;
  std::sort(affinity.begin(), affinity.end());
  affinity.erase(std::unique(affinity.begin(), affinity.end()), affinity.end());

  Topology topology;
  std::set_intersection(online.begin(), online.end(), affinity.begin(),
                        affinity.end(),
                        std::back_inserter(topology.usable_cpus));
  if (topology.usable_cpus.empty()) {
    *err = "no usable CPUs: online " + FormatCpuList(online) +
           " does not intersect affinity " + FormatCpuList(affinity);
    return false;
  }

  int64_t quota_cores = -1;
  if (!ReadQuotaCores(sources, &quota_cores, err)) return false;
  const int64_t cpu_count = static_cast<int64_t>(topology.usable_cpus.size());
  // Unlimited means "as many cores as there are CPUs"; a quota above the CPU
  // count is kept as-is (UsableCores takes the minimum) but clamped to int.
  topology.quota_cores = static_cast<int>(
      quota_cores < 0 ? cpu_count
                      : std::min<int64_t>(quota_cores,
                                          std::numeric_limits<int>::max()));

  if (!BuildTiles(sources, topology.usable_cpus, &topology.tiles, err)) {
    return false;
  }
  topology.cpu_model = ReadCpuModel(sources);
  *out = std::move(topology);
  return true;
}

}  // namespace graphi
