// Test helper: builds a fake sysfs / cgroup / proc tree in a temporary
// directory so topology discovery can be tested against machines this host
// is not (68 cores, hidden caches, cgroup quotas, ...).
//
// Layout under the temp root:
//   sys/devices/system/cpu/online
//   sys/devices/system/cpu/cpuN/cache/index{0..3}/{level,type,shared_cpu_list}
//   cgroup/cpu.max                                   (cgroup v2)
//   cgroup/cpu/cpu.cfs_quota_us, cpu.cfs_period_us   (cgroup v1)
//   proc/cpuinfo
//
// Thread-safety: thread-compatible; each test owns its own FakeSysfs.

#ifndef GRAPHI_TESTS_CC_FAKE_SYSFS_H_
#define GRAPHI_TESTS_CC_FAKE_SYSFS_H_

#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "cc/platform/topology.h"

namespace graphi {
namespace test_util {

class FakeSysfs {
 public:
  FakeSysfs() {
    const char* tmpdir = getenv("TEST_TMPDIR");
    if (tmpdir == nullptr || *tmpdir == '\0') tmpdir = getenv("TMPDIR");
    if (tmpdir == nullptr || *tmpdir == '\0') tmpdir = "/tmp";
    std::string pattern = std::string(tmpdir) + "/graphi_fake_sysfs_XXXXXX";
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    const char* created = mkdtemp(buffer.data());
    if (created == nullptr) {
      ADD_FAILURE() << "mkdtemp failed for " << pattern;
      return;
    }
    root_ = created;
  }

  ~FakeSysfs() {
    std::error_code ec;
    if (!root_.empty()) std::filesystem::remove_all(root_, ec);
  }

  FakeSysfs(const FakeSysfs&) = delete;
  FakeSysfs& operator=(const FakeSysfs&) = delete;

  const std::string& root() const { return root_; }
  std::string CpuRoot() const { return root_ + "/sys/devices/system/cpu"; }
  std::string CgroupRoot() const { return root_ + "/cgroup"; }

  // Writes `contents` to root()/relative_path, creating parent directories.
  void WriteFile(const std::string& relative_path,
                 const std::string& contents) const {
    const std::filesystem::path path =
        std::filesystem::path(root_) / relative_path;
    std::error_code ec;
    std::filesystem::create_directories(path.parent_path(), ec);
    ASSERT_FALSE(ec) << "cannot create " << path.parent_path() << ": "
                     << ec.message();
    std::ofstream file(path);
    file << contents;
    ASSERT_TRUE(file.good()) << "cannot write " << path;
  }

  void SetOnline(const std::string& cpu_list) const {
    WriteFile("sys/devices/system/cpu/online", cpu_list + "\n");
  }

  // Gives `cpu` a typical x86 cache hierarchy: private L1d/L1i (index0/1),
  // an L2 shared with `l2_shared` (index2) and an L3 shared with `l3_shared`
  // (index3).
  void AddCpuCaches(int cpu, const std::string& l2_shared,
                    const std::string& l3_shared) const {
    const std::string self = std::to_string(cpu);
    AddCache(cpu, 0, 1, "Data", self);
    AddCache(cpu, 1, 1, "Instruction", self);
    AddCache(cpu, 2, 2, "Unified", l2_shared);
    AddCache(cpu, 3, 3, "Unified", l3_shared);
  }

  void AddCache(int cpu, int index, int level, const std::string& type,
                const std::string& shared_cpu_list) const {
    const std::string dir = "sys/devices/system/cpu/cpu" +
                            std::to_string(cpu) + "/cache/index" +
                            std::to_string(index) + "/";
    WriteFile(dir + "level", std::to_string(level) + "\n");
    WriteFile(dir + "type", type + "\n");
    WriteFile(dir + "shared_cpu_list", shared_cpu_list + "\n");
  }

  // A whole machine: CPUs 0..num_cpus-1 online, grouped into L2 tiles of
  // `cpus_per_tile` consecutive CPUs, one L3 across all of them. Passing
  // cpus_per_tile = 0 creates the cpuN directories without any cache info.
  void BuildMachine(int num_cpus, int cpus_per_tile) {
    num_cpus_ = num_cpus;
    const std::string all = "0-" + std::to_string(num_cpus - 1);
    SetOnline(all);
    for (int cpu = 0; cpu < num_cpus; ++cpu) {
      if (cpus_per_tile <= 0) {
        WriteFile("sys/devices/system/cpu/cpu" + std::to_string(cpu) +
                      "/topology/core_id",
                  std::to_string(cpu) + "\n");
        continue;
      }
      const int first = cpu - cpu % cpus_per_tile;
      const int last = std::min(first + cpus_per_tile, num_cpus) - 1;
      const std::string l2 =
          first == last ? std::to_string(first)
                        : std::to_string(first) + "-" + std::to_string(last);
      AddCpuCaches(cpu, l2, all);
    }
  }

  void SetCgroupV2(const std::string& cpu_max) const {
    WriteFile("cgroup/cpu.max", cpu_max + "\n");
  }

  void SetCgroupV1(long long quota_us, long long period_us) const {
    WriteFile("cgroup/cpu/cpu.cfs_quota_us", std::to_string(quota_us) + "\n");
    WriteFile("cgroup/cpu/cpu.cfs_period_us",
              std::to_string(period_us) + "\n");
  }

  void SetCpuModel(const std::string& model) const {
    WriteFile("proc/cpuinfo",
              "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: " +
                  model + "\nflags\t\t: fpu sse2\n\n");
  }

  // Sources pointing at this tree. The affinity defaults to every CPU of
  // BuildMachine so tests never depend on the host's real affinity mask.
  TopologySources Sources(std::vector<int> affinity = {}) const {
    TopologySources sources;
    sources.sysfs_root = root_ + "/sys";
    sources.cgroup_root = root_ + "/cgroup";
    sources.proc_root = root_ + "/proc";
    if (affinity.empty()) {
      for (int cpu = 0; cpu < num_cpus_; ++cpu) affinity.push_back(cpu);
    }
    sources.affinity = std::move(affinity);
    return sources;
  }

 private:
  std::string root_;
  int num_cpus_ = 0;
};

// Cpu ids first..last inclusive.
inline std::vector<int> CpuRange(int first, int last) {
  std::vector<int> cpus;
  for (int cpu = first; cpu <= last; ++cpu) cpus.push_back(cpu);
  return cpus;
}

}  // namespace test_util
}  // namespace graphi

#endif  // GRAPHI_TESTS_CC_FAKE_SYSFS_H_
