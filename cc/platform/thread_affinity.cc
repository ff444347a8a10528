#include "cc/platform/thread_affinity.h"

#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace graphi {

bool PinCurrentThread(const std::vector<int>& cpus, std::string* error) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu : cpus) {
    if (cpu < 0 || cpu >= CPU_SETSIZE) {
      if (error) *error = "cpu id " + std::to_string(cpu) + " out of range";
      return false;
    }
    CPU_SET(cpu, &set);
  }
  if (sched_setaffinity(0, sizeof(set), &set) != 0) {
    if (error) *error = std::string("sched_setaffinity failed: ") + strerror(errno);
    return false;
  }
  return true;
}

void NameCurrentThread(const std::string& name) {
  pthread_setname_np(pthread_self(), name.substr(0, 15).c_str());
}

clockid_t CurrentThreadCpuClock() {
  clockid_t clock;
  if (pthread_getcpuclockid(pthread_self(), &clock) != 0) {
    return CLOCK_THREAD_CPUTIME_ID;
  }
  return clock;
}

int64_t ReadCpuClockNs(clockid_t clock) {
  struct timespec ts;
  if (clock_gettime(clock, &ts) != 0) return 0;
  return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

namespace {
thread_local bool tls_graphi_thread = false;
}  // namespace

int CurrentThreadTid() { return static_cast<int>(syscall(SYS_gettid)); }

bool ThreadIsRunnable(int tid) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
  FILE* f = fopen(path, "r");
  if (f == nullptr) return false;
  char buf[512];
  const size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = '\0';
  // "tid (comm) S ...": the name may hold spaces and parentheses, so the
  // state follows the last ')'.
  const char* close = strrchr(buf, ')');
  return close != nullptr && close[1] == ' ' && close[2] == 'R';
}

void MarkCurrentThreadAsGraphi() { tls_graphi_thread = true; }
bool OnGraphiThread() { return tls_graphi_thread; }

std::vector<int> CurrentThreadAffinity() {
  std::vector<int> cpus;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

}  // namespace graphi
