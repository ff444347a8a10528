// Unit tests of the kernel floating-point environment (float_environment.h):
// what UseKernelFloatEnvironment gives a thread, and what it does to float
// arithmetic there.
#include "cc/platform/float_environment.h"

#include <gtest/gtest.h>

#include <cfenv>
#include <limits>
#include <thread>

namespace graphi {
namespace {

// Runs `fn` on a new thread (each test leaves its own thread's environment
// alone, and a new thread starts from the process's initial one).
template <typename Fn>
void OnNewThread(Fn fn) {
  std::thread t(fn);
  t.join();
}

TEST(FloatEnvironmentTest, ANewThreadKeepsDenormals) {
  OnNewThread([] {
    const FloatEnvironment env = CurrentFloatEnvironment();
    EXPECT_FALSE(env.flush_to_zero);
    EXPECT_FALSE(env.denormals_are_zero);
    EXPECT_TRUE(env.round_to_nearest);
  });
}

TEST(FloatEnvironmentTest, KernelEnvironmentFlushesAndRoundsToNearest) {
  OnNewThread([] {
    std::fesetround(FE_UPWARD);
    UseKernelFloatEnvironment();
    const FloatEnvironment env = CurrentFloatEnvironment();
    EXPECT_TRUE(env.flush_to_zero);
    EXPECT_TRUE(env.denormals_are_zero);
    EXPECT_TRUE(env.round_to_nearest);
  });
}

TEST(FloatEnvironmentTest, KernelEnvironmentTurnsDenormalResultsAndInputsIntoZero) {
  // volatile: computed at run time, in this thread's environment, not folded.
  volatile float small = 1e-20f;
  volatile float denormal = std::numeric_limits<float>::denorm_min() * 1000.0f;
  volatile float one = 1.0f;
  float product = 0.0f, read = 0.0f;
  OnNewThread([&] {
    UseKernelFloatEnvironment();
    product = small * small;  // 1e-40: a denormal result
    read = denormal * one;    // a denormal input
  });
  EXPECT_EQ(product, 0.0f);
  EXPECT_EQ(read, 0.0f);
  // Without it, the same arithmetic keeps them.
  OnNewThread([&] {
    product = small * small;
    read = denormal * one;
  });
  EXPECT_GT(product, 0.0f);
  EXPECT_GT(read, 0.0f);
}

}  // namespace
}  // namespace graphi
