// A stable structural hash of a TensorFlow graph.
//
// Identical across processes for the same model code, different for
// structurally different graphs, independent of what changes run to run.
// What goes in, per node: op type, device type, and cost-relevant attributes
// (dtypes, shapes, integers, floats, bools, strings such as padding or
// data_format; a tensor attribute contributes its dtype and shape, not its
// values). What stays out: node names, attributes starting with "_", names of
// shared resources ("shared_name", "container") and function names (they
// carry per-process unique suffixes such as __inference_f_123).
//
// Structure enters through three rounds of Weisfeiler-Lehman refinement: a
// node's label is re-hashed with the sorted labels of its inputs (with output
// and input slots; control edges as slot -1). The signature hashes the sorted
// multiset of final labels, so it does not depend on node ids or on the
// order nodes were added.
//
// Thread-safety: a pure function.
#ifndef GRAPHI_TF_CC_PROFILER_GRAPH_SIGNATURE_H_
#define GRAPHI_TF_CC_PROFILER_GRAPH_SIGNATURE_H_

#include <string>

#include "tensorflow/core/graph/graph.h"

namespace graphi {

// 16 lowercase hex digits.
std::string GraphSignature(const tensorflow::Graph& graph);

}  // namespace graphi

#endif  // GRAPHI_TF_CC_PROFILER_GRAPH_SIGNATURE_H_
