// Clang thread-safety annotations (-Wthread-safety), as in Abseil's
// absl/base/thread_annotations.h, under GRAPHI_ names.
//
// Our own copy because the TensorFlow-free code (scheduler, runtime, registry,
// autotuner) is compiled without TensorFlow's include path, where Abseil's
// headers live. Under GCC the macros expand to nothing; tools/
// thread_safety_check.sh compiles the annotated translation units with clang
// and -Werror.
#ifndef GRAPHI_TF_CC_UTIL_THREAD_ANNOTATIONS_H_
#define GRAPHI_TF_CC_UTIL_THREAD_ANNOTATIONS_H_

#if defined(__clang__)
#define GRAPHI_THREAD_ANNOTATION(x) __attribute__((x))
#else
#define GRAPHI_THREAD_ANNOTATION(x)
#endif

// A type that is a lock (a "capability" to clang).
#define GRAPHI_CAPABILITY(name) GRAPHI_THREAD_ANNOTATION(capability(name))
// An RAII type that holds a lock for its lifetime.
#define GRAPHI_SCOPED_CAPABILITY GRAPHI_THREAD_ANNOTATION(scoped_lockable)
// A member that may be read or written only with `mu` held.
#define GRAPHI_GUARDED_BY(mu) GRAPHI_THREAD_ANNOTATION(guarded_by(mu))
// A pointer member whose pointee may be accessed only with `mu` held.
#define GRAPHI_PT_GUARDED_BY(mu) GRAPHI_THREAD_ANNOTATION(pt_guarded_by(mu))
// A lock that, when held together with these, is taken after them.
#define GRAPHI_ACQUIRED_AFTER(...) GRAPHI_THREAD_ANNOTATION(acquired_after(__VA_ARGS__))
// A function the caller must call with these locks held (and keep them).
#define GRAPHI_EXCLUSIVE_LOCKS_REQUIRED(...) \
  GRAPHI_THREAD_ANNOTATION(exclusive_locks_required(__VA_ARGS__))
// A function the caller must call without these locks (it takes them).
#define GRAPHI_LOCKS_EXCLUDED(...) GRAPHI_THREAD_ANNOTATION(locks_excluded(__VA_ARGS__))
// Functions that acquire / release a lock (members of a lock or a scoped lock).
#define GRAPHI_EXCLUSIVE_LOCK_FUNCTION(...) \
  GRAPHI_THREAD_ANNOTATION(exclusive_lock_function(__VA_ARGS__))
#define GRAPHI_UNLOCK_FUNCTION(...) GRAPHI_THREAD_ANNOTATION(unlock_function(__VA_ARGS__))
// A function that checks, at run time, that the lock is held.
#define GRAPHI_ASSERT_EXCLUSIVE_LOCK(...) \
  GRAPHI_THREAD_ANNOTATION(assert_exclusive_lock(__VA_ARGS__))
// Turns the analysis off for one function (say why where it is used).
#define GRAPHI_NO_THREAD_SAFETY_ANALYSIS GRAPHI_THREAD_ANNOTATION(no_thread_safety_analysis)

#endif  // GRAPHI_TF_CC_UTIL_THREAD_ANNOTATIONS_H_
