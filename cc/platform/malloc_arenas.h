// Raises glibc's limit on malloc arenas so that GRAPHI's threads do not
// share an arena with a busy thread.
//
// glibc gives each thread that allocates an arena of its own until the
// process has 8 per core (64-bit), then makes later threads share. GRAPHI
// adds its team leaders, helpers and watchdog to TensorFlow's pools and the
// caller's threads, which can push a small machine over that limit; a team
// leader sharing an arena with a busy client thread then contends on its
// lock (the measurement: docs/design.md, "Malloc arenas").
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
