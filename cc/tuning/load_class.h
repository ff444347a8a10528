// Load classes: how many of a graph's top-level steps run at once (one at a
// time, or overlapping: concurrent requests, serving), and the tracker that
// says which class a graph is in now.
//
// The best layout depends on the load: for an LSTM served on 2 cores one
// team beat TensorFlow's pools by 1.25x for one request at a time, while
// under 4 clients TensorFlow's pools served the most requests; and it
// depends on how much load: on the 2-vCPU Xeon (docs/results/
// serving_head_xeon_2026-12-06_f0ac86c/) TensorFlow's executor on
// inter=2 intra=1 pools served as many LSTM requests as its default pools
// under 4 clients (856 and 874 req/s) and 1.2x as many under 8 (942 and
// 797). So settings are tuned, adopted and cached per (graph signature, load
// class), and the process follows the setting of the class its main graph is
// in (graph_registry.h, runtime.h).
//
// Classes under load are levels of steps in flight, each named by the power
// of two it is nearest to (geometrically): 2, 3-5 ("under_load_4"), 6-11
// ("under_load_8"), 12-22, 23-45, and 46 or more ("under_load_64"). Closed-
// loop clients usually come in powers of two, and their steps in flight are
// their number or a little less (a client between requests): 4 clients sit
// in the middle of 3-5, not on an edge.
//
// A graph starts in kAlone and changes class after `steps_to_switch`
// finished top-level steps in a row that belong to other classes, to the
// class of the median of those steps: a burst of a few overlapping steps (a
// warm-up thread, a second caller now and then) does not move it, a load
// that lasts does.
//
// Free of TensorFlow types. Thread-safety: LoadClassTracker is not
// thread-safe; its owner serializes calls (GraphLoad's lock).
#ifndef GRAPHI_TF_CC_TUNING_LOAD_CLASS_H_
#define GRAPHI_TF_CC_TUNING_LOAD_CLASS_H_

#include <string>
#include <vector>

namespace graphi {

enum class LoadClass : int {
  kAlone = 0,         // one step at a time
  kUnderLoad2 = 1,    // 2 steps in flight
  kUnderLoad4 = 2,    // 3-5
  kUnderLoad8 = 3,    // 6-11
  kUnderLoad16 = 4,   // 12-22
  kUnderLoad32 = 5,   // 23-45
  kUnderLoad64 = 6,   // 46 or more
};
inline constexpr int kLoadClassCount = 7;

// The class of a step that ran with `in_flight` steps of its graph in
// flight at most, itself included (<= 1: kAlone).
LoadClass LoadClassOf(int in_flight);
// The number of steps in flight a class is named by: 1, 2, 4, ..., 64.
int NominalInFlight(LoadClass load_class);
inline bool IsUnderLoad(LoadClass load_class) { return load_class != LoadClass::kAlone; }

// "alone", "under_load_2", ..., "under_load_64": the names the cache and
// info() use.
const char* LoadClassName(LoadClass load_class);
// Parses a name of LoadClassName; false for anything else.
bool ParseLoadClass(const std::string& name, LoadClass* out);
// The names of every class, comma-separated (for error messages).
std::string LoadClassNames();

class LoadClassTracker {
 public:
  // Steps in a row of other classes before the class changes.
  static constexpr int kDefaultStepsToSwitch = 16;

  explicit LoadClassTracker(int steps_to_switch = kDefaultStepsToSwitch);

  // Counts a finished top-level step that ran with `in_flight` steps of the
  // graph in flight at most, itself included; returns whether the class
  // changed.
  bool Note(int in_flight);
  LoadClass current() const { return current_; }

 private:
  const int steps_to_switch_;
  LoadClass current_ = LoadClass::kAlone;
  // The steps in flight of the steps in a row, up to now, of other classes.
  std::vector<int> other_run_;
};

}  // namespace graphi

#endif  // GRAPHI_TF_CC_TUNING_LOAD_CLASS_H_
