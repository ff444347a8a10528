// Adopted settings: a team layout recorded for a graph signature and a load
// class (load_class.h) by the cache (at import), tune() or the autotuner, who
// hears about them, and where the setting a graph runs with came from.
//
// The profiler keeps adoptions (graph_registry.h) but does not decide the
// process-wide layout; the executor's Runtime does, as the registry's
// AdoptionListener (runtime.cc). This header is what the two share, so the
// profiler includes nothing of the executor.
//
// Free of TensorFlow types. Thread-safety: plain data and a pure function;
// AdoptionSlots is not thread-safe (its owners lock); AdoptionListener
// implementations must be thread-safe.
#ifndef GRAPHI_TF_CC_TUNING_ADOPTION_H_
#define GRAPHI_TF_CC_TUNING_ADOPTION_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cc/teams/setting.h"
#include "cc/tuning/load_class.h"

namespace graphi {

// A setting (and costs) recorded for a signature by the cache, tune() or the
// autotuner, for the graph's steps in one load class (tune() times one step
// at a time: kAlone).
struct Adoption {
  Setting setting;  // complete (E x T, or stock), with or without a policy
  SettingSource source = SettingSource::kCache;  // kCache, kTuned or kAutotuned
  LoadClass load_class = LoadClass::kAlone;
  std::vector<int64_t> node_costs_ns;
  std::vector<std::string> node_names;
};

// A graph's adoptions, at most one per load class.
class AdoptionSlots {
 public:
  // Replaces the adoption of `adoption.load_class`.
  void Set(const Adoption& adoption);
  // The adoption recorded for `load_class`, or null.
  const Adoption* For(LoadClass load_class) const;
  // The one a graph in `load_class` runs with: that class's, else the
  // nearest class's, the lighter load of two as near (a setting tuned for
  // another load beats none), else null.
  const Adoption* InForce(LoadClass load_class) const;
  bool empty() const;

 private:
  std::array<std::optional<Adoption>, kLoadClassCount> slots_;
};

// Hears about adoptions, to decide whether the process-wide layout follows.
class AdoptionListener {
 public:
  virtual ~AdoptionListener() = default;
  // `adoption` is now the one in force for a graph of `node_count` nodes
  // that runs in this process: `newly_adopted` when it was just recorded,
  // false when the graph's load class changed and it applies again.
  virtual void OnAdopted(const Adoption& adoption, int node_count, bool newly_adopted) = 0;
  // Every adoption was forgotten.
  virtual void OnAdoptionsCleared() = 0;
};

// Where the setting a graph runs with came from (info(), graphs()).
// `process_source` is where the process-wide setting in force came from and
// `in_force` that setting; `own` is the graph's own adoption, or null. A
// graph whose own adopted setting is the one in force reports that
// adoption's source; a graph that runs on another graph's adopted setting
// reports kDefault (nothing was chosen for it); otherwise the process-wide
// source.
SettingSource GraphSettingSource(SettingSource process_source, const Setting& in_force,
                                 const Adoption* own);

}  // namespace graphi

#endif  // GRAPHI_TF_CC_TUNING_ADOPTION_H_
