// Which steps of a graph time their kernels for the cost model.
//
// Timing an op costs two clock reads, tens of nanoseconds each under a
// hypervisor, and a step of many tiny ops pays them on every op, where stock
// TensorFlow reads no clock at all (the measurement: docs/design.md, "Inline
// execution"). The cost model does not need
// every step: a decayed mean settles within the first steps and then moves
// slowly. So every step is timed until `timed_warmup_steps` steps have
// started, and after that one step in `stride` (the first of each stride).
// Steps that record a timeline are timed whatever this says (the caller's
// business).
//
// The stride starts at kTimedStepStride; the owner may widen it once the
// warm-up has measured the graph (StrideForOpCost), since one in eight is
// still noticeable on ops of a microsecond or two and free on a CNN's ops of
// tens of microseconds.
//
// Free of TensorFlow types. Thread-safety: TakeTurn() and set_stride() may be
// called concurrently; the counter and the stride are relaxed atomics (which
// steps get a turn matters only on average, not exactly).
#ifndef GRAPHI_TF_CC_PROFILER_STEP_TIMING_SAMPLER_H_
#define GRAPHI_TF_CC_PROFILER_STEP_TIMING_SAMPLER_H_

#include <algorithm>
#include <atomic>
#include <cstdint>

namespace graphi {

// Every step is timed until this many steps of the graph have started.
inline constexpr int64_t kTimedWarmupSteps = 100;
// After that, one step in this many, at first.
inline constexpr int64_t kTimedStepStride = 8;
// The widest stride StrideForOpCost picks.
inline constexpr int64_t kMaxTimedStepStride = 256;
// The share of a graph's op time that timing may cost on average, after the
// warm-up: 1/500 (0.2%).
inline constexpr int64_t kTimingBudgetInverse = 500;

// The stride at which timing a graph whose ops take `mean_op_ns` on average
// costs at most 1/kTimingBudgetInverse of its op time, given a clock read of
// `clock_read_ns`; never below kTimedStepStride nor above
// kMaxTimedStepStride. An unknown cost (mean_op_ns <= 0) keeps the default.
inline int64_t StrideForOpCost(int64_t mean_op_ns, int64_t clock_read_ns) {
  if (mean_op_ns <= 0) return kTimedStepStride;
  const int64_t timing_ns = 2 * std::max<int64_t>(clock_read_ns, 1) * kTimingBudgetInverse;
  const int64_t stride = (timing_ns + mean_op_ns - 1) / mean_op_ns;
  return std::clamp(stride, kTimedStepStride, kMaxTimedStepStride);
}

class StepTimingSampler {
 public:
  explicit StepTimingSampler(int64_t timed_warmup_steps = kTimedWarmupSteps,
                             int64_t stride = kTimedStepStride)
      : timed_warmup_steps_(timed_warmup_steps), stride_(stride < 1 ? 1 : stride) {}

  // Called once as each step starts: whether that step times its kernels.
  // Sets *step, if given, to the number of steps that started before it.
  bool TakeTurn(int64_t* step = nullptr) {
    const int64_t n = started_.fetch_add(1, std::memory_order_relaxed);
    if (step != nullptr) *step = n;
    return n < timed_warmup_steps_ ||
           (n - timed_warmup_steps_) % stride_.load(std::memory_order_relaxed) == 0;
  }

  int64_t timed_warmup_steps() const { return timed_warmup_steps_; }
  int64_t stride() const { return stride_.load(std::memory_order_relaxed); }
  // Takes effect from the next TakeTurn(); values below 1 count as 1.
  void set_stride(int64_t stride) {
    stride_.store(stride < 1 ? 1 : stride, std::memory_order_relaxed);
  }

 private:
  const int64_t timed_warmup_steps_;
  std::atomic<int64_t> stride_;
  std::atomic<int64_t> started_{0};
};

}  // namespace graphi

#endif  // GRAPHI_TF_CC_PROFILER_STEP_TIMING_SAMPLER_H_
