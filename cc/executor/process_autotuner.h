// The process's Autotuner, wired to the Runtime (which layout later steps
// use) and the GraphRegistry (where an autotuned setting is adopted, source
// "autotuned", with the graph's measured costs).
//
// Candidates are TuningCandidates (team_layout.h; the settings graphi_tf.tune
// sweeps by default) and the stock setting, the reference.
//
// Free of TensorFlow types. Thread-safety: thread-safe.
#ifndef GRAPHI_TF_CC_EXECUTOR_PROCESS_AUTOTUNER_H_
#define GRAPHI_TF_CC_EXECUTOR_PROCESS_AUTOTUNER_H_

#include "cc/tuning/autotuner.h"
#include "cc/platform/topology.h"

namespace graphi {

// Created on first use; never destroyed (steps may finish during exit).
Autotuner& ProcessAutotuner();

}  // namespace graphi

#endif  // GRAPHI_TF_CC_EXECUTOR_PROCESS_AUTOTUNER_H_
