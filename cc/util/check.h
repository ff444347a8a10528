// GRAPHI_DCHECK: invariant checks in debug builds (no NDEBUG), as
// TensorFlow's DCHECK, for TensorFlow-free code too.
//
// A failed check prints the condition, file and line and aborts. Release
// builds (NDEBUG, as Python extensions are usually compiled) do not
// evaluate the condition. The C++ tests build without NDEBUG, so they run
// every check.
#ifndef GRAPHI_TF_CC_UTIL_CHECK_H_
#define GRAPHI_TF_CC_UTIL_CHECK_H_

#include <cstdio>
#include <cstdlib>

#ifdef NDEBUG
#define GRAPHI_DCHECK(condition) \
  do {                           \
    if (false && (condition)) {  \
    }                            \
  } while (false)
#else
#define GRAPHI_DCHECK(condition)                                                      \
  do {                                                                                \
    if (!(condition)) {                                                               \
      std::fprintf(stderr, "graphi_tf: check failed at %s:%d: %s\n", __FILE__, __LINE__, \
                   #condition);                                                       \
      std::abort();                                                                   \
    }                                                                                 \
  } while (false)
#endif

#endif  // GRAPHI_TF_CC_UTIL_CHECK_H_
