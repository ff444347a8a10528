// Which steps of a graph time their kernels for the cost model.
//
// Timing an op costs two clock reads. Under a hypervisor a read is tens of
// nanoseconds (kvm-clock through the vDSO: about 50 ns on the 2-vCPU Xeon of
// 2026-12-02), and a step of many tiny ops pays it on every op: on an LSTM
// serving step of about 1 ms the reads were 5% of the process's CPU time,
// where stock TensorFlow reads no clock at all. The cost model does not need
// every step: a decayed mean settles within the first steps and then moves
// slowly. So every step is timed until `timed_warmup_steps` steps have
// started, and after that one step in `stride` (the first of each stride).
// Steps that record a timeline are timed whatever this says (the caller's
// business).
//
// Free of TensorFlow types. Thread-safety: TakeTurn() may be called
// concurrently; the counter is a relaxed atomic (which steps get a turn
// matters only on average, not exactly).
#ifndef GRAPHI_TF_CC_PROFILER_STEP_TIMING_SAMPLER_H_
#define GRAPHI_TF_CC_PROFILER_STEP_TIMING_SAMPLER_H_

#include <atomic>
#include <cstdint>

namespace graphi {

// Every step is timed until this many steps of the graph have started.
inline constexpr int64_t kTimedWarmupSteps = 100;
// After that, one step in this many.
inline constexpr int64_t kTimedStepStride = 8;

class StepTimingSampler {
 public:
  explicit StepTimingSampler(int64_t timed_warmup_steps = kTimedWarmupSteps,
                             int64_t stride = kTimedStepStride)
      : timed_warmup_steps_(timed_warmup_steps), stride_(stride < 1 ? 1 : stride) {}

  // Called once as each step starts: whether that step times its kernels.
  bool TakeTurn() {
    const int64_t n = started_.fetch_add(1, std::memory_order_relaxed);
    return n < timed_warmup_steps_ || (n - timed_warmup_steps_) % stride_ == 0;
  }

 private:
  const int64_t timed_warmup_steps_;
  const int64_t stride_;
  std::atomic<int64_t> started_{0};
};

}  // namespace graphi

#endif  // GRAPHI_TF_CC_PROFILER_STEP_TIMING_SAMPLER_H_
