// The process's Autotuner, wired to the Runtime (which layout later steps
// use) and the GraphRegistry (where an autotuned setting is adopted, source
// "autotuned", with the graph's measured costs).
//
// Candidates are the symmetric settings on whole tiles whose team size is 1 or
// a multiple of the tile size (the settings graphi_tf.tune sweeps by
// default); the default is DefaultSetting.
//
// Free of TensorFlow types. Thread-safety: thread-safe.
#ifndef GRAPHI_TF_CC_EXECUTOR_PROCESS_AUTOTUNER_H_
#define GRAPHI_TF_CC_EXECUTOR_PROCESS_AUTOTUNER_H_

#include <vector>

#include "cc/executor/autotuner.h"
#include "cc/executor/topology.h"

namespace graphi {

// Created on first use; never destroyed (steps may finish during exit).
Autotuner& ProcessAutotuner();

// The settings the autotuner (and graphi_tf.tune by default) tries on
// `topology`.
std::vector<LayoutSetting> TuningCandidates(const Topology& topology);

}  // namespace graphi

#endif  // GRAPHI_TF_CC_EXECUTOR_PROCESS_AUTOTUNER_H_
