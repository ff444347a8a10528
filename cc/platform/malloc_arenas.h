// Raises glibc's limit on malloc arenas so that GRAPHI's threads do not
// share an arena with a busy thread.
//
// glibc gives each thread that allocates an arena of its own until the
// process has 8 per core (64-bit), then makes later threads share. GRAPHI
// adds its team leaders, helpers and watchdog to TensorFlow's pools and the
// caller's threads: a MobileNetV2 SavedModel served to 8 Python clients on
// 2 vCPUs had 21 threads under GRAPHI (15 under stock TensorFlow), over the
// 16 arenas. A team leader that shares an arena with a client thread
// contends on its lock (perf: a fifth of the samples in futex wait/wake
// under __lll_lock_wait_private), and some processes fell into a slow mode
// for good: 242-273 requests/s instead of 390-476, in 4 of 12 processes
// (2-vCPU Xeon, 2026-12-03, 5 s each after 4 s of warm-up). With the limit
// at 64 (MALLOC_ARENA_MAX=64, or this file), 0 of 18: 380-496.
//
// The limit is only raised, never lowered, and a user's own choice
// (MALLOC_ARENA_MAX, or arena_max in GLIBC_TUNABLES) is left alone.
//
// Free of TensorFlow types. Thread-safety: call once, before GRAPHI starts
// its threads (Runtime's constructor).
#ifndef GRAPHI_TF_CC_PLATFORM_MALLOC_ARENAS_H_
#define GRAPHI_TF_CC_PLATFORM_MALLOC_ARENAS_H_

namespace graphi {

// The arena limit GRAPHI asks for on a machine of `online_cpus`: 16 per cpu,
// at least 64 (twice glibc's default).
int WantedMallocArenaMax(int online_cpus);

// Sets M_ARENA_MAX to WantedMallocArenaMax unless the user chose a limit or
// this is not glibc; returns the limit set, or 0 if it left it alone.
int RaiseMallocArenaMax(int online_cpus);

}  // namespace graphi

#endif  // GRAPHI_TF_CC_PLATFORM_MALLOC_ARENAS_H_
