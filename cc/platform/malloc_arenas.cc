#include "cc/platform/malloc_arenas.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace graphi {

int WantedMallocArenaMax(int online_cpus) { return std::max(64, 16 * std::max(1, online_cpus)); }

int RaiseMallocArenaMax(int online_cpus) {
#if defined(__GLIBC__) && defined(M_ARENA_MAX)
  if (std::getenv("MALLOC_ARENA_MAX") != nullptr) return 0;
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables != nullptr && std::strstr(tunables, "arena_max") != nullptr) return 0;
  const int wanted = WantedMallocArenaMax(online_cpus);
  return mallopt(M_ARENA_MAX, wanted) == 1 ? wanted : 0;
#else
  (void)online_cpus;
  return 0;
#endif
}

}  // namespace graphi
