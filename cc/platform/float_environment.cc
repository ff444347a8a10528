#include "cc/platform/float_environment.h"

#include <cfenv>
#include <cstdint>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>
#endif

namespace graphi {
namespace {

#if defined(__x86_64__) || defined(__i386__)
// MXCSR bits (Intel SDM vol. 1, 10.2.3); xmmintrin.h names only FTZ's.
constexpr uint32_t kMxcsrFlushToZero = 1u << 15;
constexpr uint32_t kMxcsrDenormalsAreZero = 1u << 6;
#elif defined(__aarch64__)
// FPCR.FZ: flush denormal inputs and results of single and double precision.
constexpr uint64_t kFpcrFlushToZero = 1ull << 24;

uint64_t ReadFpcr() {
  uint64_t fpcr;
  __asm__ __volatile__("mrs %0, fpcr" : "=r"(fpcr));
  return fpcr;
}
#endif

}  // namespace

void UseKernelFloatEnvironment() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_setcsr(_mm_getcsr() | kMxcsrFlushToZero | kMxcsrDenormalsAreZero);
#elif defined(__aarch64__)
  const uint64_t fpcr = ReadFpcr() | kFpcrFlushToZero;
  __asm__ __volatile__("msr fpcr, %0" : : "r"(fpcr));
#endif
  // Both the x87 and the SSE rounding modes (glibc sets both).
  std::fesetround(FE_TONEAREST);
}

FloatEnvironment CurrentFloatEnvironment() {
  FloatEnvironment env;
#if defined(__x86_64__) || defined(__i386__)
  const uint32_t mxcsr = _mm_getcsr();
  env.flush_to_zero = (mxcsr & kMxcsrFlushToZero) != 0;
  env.denormals_are_zero = (mxcsr & kMxcsrDenormalsAreZero) != 0;
#elif defined(__aarch64__)
  env.flush_to_zero = env.denormals_are_zero = (ReadFpcr() & kFpcrFlushToZero) != 0;
#endif
  env.round_to_nearest = std::fegetround() == FE_TONEAREST;
  return env;
}

}  // namespace graphi
