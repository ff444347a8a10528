// The floating-point environment of the threads that run kernels.
//
// TensorFlow's pool threads run every kernel with denormal results flushed
// to zero (FTZ), denormal inputs read as zero (DAZ) and rounding to nearest:
// its thread pool sets them as each thread starts (EigenEnvironment in
// threadpool.cc), and eager ops and grappler's constant folding set the same.
// Kernels' results depend on it (in float32, 1e-9 * 1e-30 is 0 there, not
// 1e-39), and so does their speed (on x86 denormal operands and results take
// microcode assists). GRAPHI's threads that run kernels (team workers and
// helpers, a stock point's pools) set the same as they start, so a kernel
// gives stock's bits whichever thread runs it. A thread that is not GRAPHI's
// (a caller draining a caller-driven step) keeps its own environment, as it
// would under TensorFlow's executor.
//
// Free of TensorFlow types. Thread-safety: acts on the calling thread only.
#ifndef GRAPHI_TF_CC_PLATFORM_FLOAT_ENVIRONMENT_H_
#define GRAPHI_TF_CC_PLATFORM_FLOAT_ENVIRONMENT_H_

namespace graphi {

// What a thread's floating-point environment does with denormals and
// rounding.
struct FloatEnvironment {
  bool flush_to_zero = false;       // denormal results become 0
  bool denormals_are_zero = false;  // denormal inputs read as 0
  bool round_to_nearest = false;
};

// Gives the calling thread TensorFlow's kernel environment (above), for the
// rest of its life. Where the processor has no DAZ control (aarch64: one
// flush-to-zero bit covers both), it sets what there is, as TensorFlow does.
void UseKernelFloatEnvironment();

// The calling thread's environment.
FloatEnvironment CurrentFloatEnvironment();

}  // namespace graphi

#endif  // GRAPHI_TF_CC_PLATFORM_FLOAT_ENVIRONMENT_H_
