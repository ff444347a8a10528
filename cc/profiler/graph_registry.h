// The graphs GRAPHI has run in this process, by signature (GraphProfile,
// graph_profile.h), and the settings adopted for them.
//
// Adopted settings come from the cache (at import), tune() or the autotuner;
// they are kept by signature and load class (load_class.h), so they also
// apply to graphs seen later in the process. A graph's adoption in force
// (GraphLoad) is handed to the AdoptionListener (the executor's Runtime),
// which decides whether the process-wide layout follows it: when it is
// adopted, when the graph registers, and when the graph changes class.
//
// Free of TensorFlow types. Thread-safety: thread-safe.
#ifndef GRAPHI_TF_CC_PROFILER_GRAPH_REGISTRY_H_
#define GRAPHI_TF_CC_PROFILER_GRAPH_REGISTRY_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cc/profiler/graph_profile.h"
#include "cc/tuning/adoption.h"
#include "cc/util/mutex.h"
#include "cc/util/thread_annotations.h"

namespace graphi {

class GraphRegistry {
 public:
  static GraphRegistry& Get();

  // The profile for a graph: the existing one for `signature` if its node
  // names match, else a new one (which then becomes the one listed). Applies
  // an adoption recorded for the signature.
  std::shared_ptr<GraphProfile> Register(const std::string& signature,
                                         std::vector<std::string> node_names,
                                         std::vector<std::vector<int>> successors,
                                         std::vector<std::string> node_types = {});

  // Every graph, now and registered later, records each step until `step`
  // steps have finished (StepRecorder::RecordThrough); 0 turns it off.
  void RecordStepsThrough(int64_t step);

  // Records an adoption for `signature` and its load class (now and for
  // graphs registered later) and, once the graph runs and if it is the one
  // in force for the graph's class, hands it to the listener. Returns
  // whether costs were applied to a live graph.
  bool Adopt(const std::string& signature, const Adoption& adoption);

  // `profile`'s graph changed load class (TopLevelStepEnd): hands the
  // adoption now in force for it, if any, to the listener.
  void LoadClassChanged(const GraphProfile& profile);

  // Forgets every adoption (and tells the listener): for tests, and for
  // users who want the default back without restarting.
  void ClearAdoptions();

  // Who hears about adoptions of running graphs (null: nobody). Not owned;
  // must live as long as the registry (the process).
  void SetAdoptionListener(AdoptionListener* listener);

  std::vector<std::shared_ptr<GraphProfile>> List() const;
  std::shared_ptr<GraphProfile> Find(const std::string& signature) const;

 private:
  // Hands `adoption` of the running graph `profile` to the listener.
  void Forward(const GraphProfile& profile, const Adoption& adoption, bool newly_adopted)
      GRAPHI_LOCKS_EXCLUDED(mu_);

  std::atomic<AdoptionListener*> listener_{nullptr};
  mutable Mutex mu_;
  std::map<std::string, std::shared_ptr<GraphProfile>> profiles_ GRAPHI_GUARDED_BY(mu_);
  std::map<std::string, AdoptionSlots> adoptions_ GRAPHI_GUARDED_BY(mu_);
  int64_t record_through_step_ GRAPHI_GUARDED_BY(mu_) = 0;
};

}  // namespace graphi

#endif  // GRAPHI_TF_CC_PROFILER_GRAPH_REGISTRY_H_
