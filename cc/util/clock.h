// The one clock GRAPHI reads for durations: monotonic nanoseconds.
//
// Kernel times (cost model, timelines), step times (autotuner), spin
// deadlines and the watchdog all use it, so their figures compare directly.
// It is CLOCK_MONOTONIC, the clock of std::chrono::steady_clock on Linux and
// of Python's time.monotonic_ns().
//
// Free of TensorFlow types. Thread-safety: thread-safe.
#ifndef GRAPHI_TF_CC_UTIL_CLOCK_H_
#define GRAPHI_TF_CC_UTIL_CLOCK_H_

#include <time.h>

#include <cstdint>

namespace graphi {

inline int64_t MonotonicNowNs() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

// What one MonotonicNowNs() costs on this machine (ns, at least 1): the mean
// of 1000 reads, measured once per process on first use. Thread-safe.
inline int64_t ClockReadCostNs() {
  static const int64_t cost = [] {
    constexpr int kReads = 1000;
    const int64_t start = MonotonicNowNs();
    int64_t last = start;
    for (int i = 0; i < kReads; ++i) last = MonotonicNowNs();
    const int64_t mean = (last - start) / kReads;
    return mean < 1 ? int64_t{1} : mean;
  }();
  return cost;
}

}  // namespace graphi

#endif  // GRAPHI_TF_CC_UTIL_CLOCK_H_
