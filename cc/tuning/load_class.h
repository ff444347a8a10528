// Load classes: whether a graph's top-level steps run one at a time or
// overlap (concurrent requests, serving), and the tracker that says which
// class a graph is in now.
//
// The best layout depends on the load: for an LSTM served on 2 cores one
// team beat TensorFlow's pools by 1.25x for one request at a time, while
// under 4 clients TensorFlow's pools served the most requests. So settings
// are tuned, adopted and cached per (graph signature, load class), and the
// process follows the setting of the class its main graph is in
// (graph_registry.h, runtime.h).
//
// A graph starts in kAlone and changes class after `steps_to_switch`
// finished top-level steps in a row of the other kind: a burst of a few
// overlapping steps (a warm-up thread, a second caller now and then) does
// not move it, a load that lasts does.
//
// Free of TensorFlow types. Thread-safety: LoadClassTracker is not
// thread-safe; its owner serializes calls (GraphProfile's lock).
#ifndef GRAPHI_TF_CC_TUNING_LOAD_CLASS_H_
#define GRAPHI_TF_CC_TUNING_LOAD_CLASS_H_

#include <string>

namespace graphi {

enum class LoadClass : int {
  kAlone = 0,      // one step at a time
  kUnderLoad = 1,  // steps overlap
};
inline constexpr int kLoadClassCount = 2;

// "alone" or "under_load": the names the cache and info() use.
const char* LoadClassName(LoadClass load_class);
// Parses a name of LoadClassName; false for anything else.
bool ParseLoadClass(const std::string& name, LoadClass* out);

class LoadClassTracker {
 public:
  // Steps in a row of the other kind before the class changes.
  static constexpr int kDefaultStepsToSwitch = 16;

  explicit LoadClassTracker(int steps_to_switch = kDefaultStepsToSwitch);

  // Counts a finished top-level step (`overlapped`: another step of the
  // graph was in flight while it ran); returns whether the class changed.
  bool Note(bool overlapped);
  LoadClass current() const { return current_; }

 private:
  const int steps_to_switch_;
  LoadClass current_ = LoadClass::kAlone;
  int other_run_ = 0;  // steps in a row of the other class, up to now
};

}  // namespace graphi

#endif  // GRAPHI_TF_CC_TUNING_LOAD_CLASS_H_
