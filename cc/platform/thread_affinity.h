// Thread placement helpers: pinning, naming, per-thread CPU clocks and states.
//
// Free of TensorFlow types. All functions act on the calling thread unless a
// clock id is passed in, and are thread-safe.
#ifndef GRAPHI_TF_CC_PLATFORM_THREAD_AFFINITY_H_
#define GRAPHI_TF_CC_PLATFORM_THREAD_AFFINITY_H_

#include <time.h>

#include <cstdint>
#include <string>
#include <vector>

namespace graphi {

// Restricts the calling thread to `cpus`. Returns false (and fills *error)
// if the kernel refuses, e.g. a cpu outside the process's cpuset.
bool PinCurrentThread(const std::vector<int>& cpus, std::string* error);

// Sets the calling thread's name (truncated to 15 characters, the kernel's
// limit), visible in /proc/<pid>/task/<tid>/comm and in debuggers.
void NameCurrentThread(const std::string& name);

// The CPU-time clock of the calling thread, readable from any thread.
clockid_t CurrentThreadCpuClock();

// Nanoseconds of CPU time consumed on `clock`; 0 if it cannot be read (the
// thread exited).
int64_t ReadCpuClockNs(clockid_t clock);

// The calling thread's kernel thread id.
int CurrentThreadTid();

// Whether thread `tid` of this process is running or waiting for a cpu
// (state R in /proc/self/task/<tid>/stat), rather than sleeping or blocked.
// False if it cannot be read (e.g. the thread exited).
bool ThreadIsRunnable(int tid);

// Marks the calling thread as one of GRAPHI's own (a team leader, substitute
// or helper). Thread-local; never unset.
void MarkCurrentThreadAsGraphi();
// Whether the calling thread is one of GRAPHI's own threads.
bool OnGraphiThread();

// The calling thread's affinity mask as a sorted cpu list.
std::vector<int> CurrentThreadAffinity();

}  // namespace graphi

#endif  // GRAPHI_TF_CC_PLATFORM_THREAD_AFFINITY_H_
