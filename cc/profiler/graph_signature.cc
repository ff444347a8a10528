#include "cc/profiler/graph_signature.h"

#include <algorithm>
#include <cinttypes>
#include <cstring>
#include <cstdio>
#include <map>
#include <tuple>
#include <vector>

#include "tensorflow/core/framework/attr_value.pb.h"
#include "tensorflow/core/framework/node_def.pb.h"
#include "tensorflow/core/util/device_name_utils.h"

namespace graphi {
namespace {

// FNV-1a over bytes, finished with a 64-bit mixer: deterministic across
// processes and platforms (unlike std::hash).
class Hasher {
 public:
  Hasher& Add(uint64_t v) {
    for (int i = 0; i < 8; ++i) Byte(static_cast<unsigned char>(v >> (8 * i)));
    return *this;
  }
  Hasher& Add(const std::string& s) {
    Add(static_cast<uint64_t>(s.size()));
    for (char c : s) Byte(static_cast<unsigned char>(c));
    return *this;
  }
  uint64_t Finish() const {
    uint64_t z = h_ + 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

 private:
  void Byte(unsigned char c) {
    h_ ^= c;
    h_ *= 0x100000001b3ULL;
  }
  uint64_t h_ = 0xcbf29ce484222325ULL;
};

void AddShape(const tensorflow::TensorShapeProto& shape, Hasher* h) {
  h->Add(shape.unknown_rank() ? 1 : 0).Add(static_cast<uint64_t>(shape.dim_size()));
  for (const auto& d : shape.dim()) h->Add(static_cast<uint64_t>(d.size()));
}

void AddAttrValue(const tensorflow::AttrValue& v, Hasher* h) {
  using tensorflow::AttrValue;
  h->Add(static_cast<uint64_t>(v.value_case()));
  switch (v.value_case()) {
    case AttrValue::kS:
      h->Add(v.s());
      break;
    case AttrValue::kI:
      h->Add(static_cast<uint64_t>(v.i()));
      break;
    case AttrValue::kF: {
      uint64_t bits = 0;
      const double d = v.f();
      std::memcpy(&bits, &d, sizeof(bits));
      h->Add(bits);
      break;
    }
    case AttrValue::kB:
      h->Add(v.b() ? 1 : 0);
      break;
    case AttrValue::kType:
      h->Add(static_cast<uint64_t>(v.type()));
      break;
    case AttrValue::kShape:
      AddShape(v.shape(), h);
      break;
    case AttrValue::kTensor:
      h->Add(static_cast<uint64_t>(v.tensor().dtype()));
      AddShape(v.tensor().tensor_shape(), h);
      break;
    case AttrValue::kList: {
      const auto& l = v.list();
      h->Add(static_cast<uint64_t>(l.s_size()));
      for (const auto& s : l.s()) h->Add(s);
      for (auto i : l.i()) h->Add(static_cast<uint64_t>(i));
      for (auto t : l.type()) h->Add(static_cast<uint64_t>(t));
      for (const auto& s : l.shape()) AddShape(s, h);
      for (auto b : l.b()) h->Add(b ? 1 : 0);
      h->Add(static_cast<uint64_t>(l.func_size()));  // count only: names vary
      break;
    }
    case AttrValue::kFunc:
      break;  // the name carries a per-process suffix
    default:
      break;
  }
}

uint64_t NodeLabel(const tensorflow::Graph& graph, const tensorflow::Node& node) {
  Hasher h;
  h.Add(node.type_string());
  tensorflow::DeviceNameUtils::ParsedName device;
  // Asked of the graph: a node's own back pointer is not set in every graph
  // TensorFlow hands an executor.
  const std::string& assigned = graph.get_assigned_device_name(node);
  const std::string& name = assigned.empty() ? node.requested_device() : assigned;
  if (tensorflow::DeviceNameUtils::ParseFullName(name, &device) && device.has_type) {
    h.Add(device.type);
  }
  std::vector<const std::pair<const std::string, tensorflow::AttrValue>*> attrs;
  for (const auto& kv : node.def().attr()) {
    const std::string& key = kv.first;
    if (key.empty() || key[0] == '_' || key == "shared_name" || key == "container") continue;
    attrs.push_back(&kv);
  }
  std::sort(attrs.begin(), attrs.end(), [](const auto* a, const auto* b) { return a->first < b->first; });
  for (const auto* kv : attrs) {
    h.Add(kv->first);
    AddAttrValue(kv->second, &h);
  }
  return h.Finish();
}

}  // namespace

std::string GraphSignature(const tensorflow::Graph& graph) {
  const int n = graph.num_node_ids();
  std::vector<uint64_t> label(n, 0);
  std::vector<const tensorflow::Node*> nodes;
  for (const tensorflow::Node* node : graph.nodes()) {
    label[node->id()] = NodeLabel(graph, *node);
    nodes.push_back(node);
  }
  std::vector<uint64_t> next(n, 0);
  std::vector<std::tuple<uint64_t, int, int>> inputs;
  for (int round = 0; round < 3; ++round) {
    for (const tensorflow::Node* node : nodes) {
      inputs.clear();
      for (const tensorflow::Edge* e : node->in_edges()) {
        inputs.emplace_back(label[e->src()->id()], e->IsControlEdge() ? -1 : e->src_output(),
                            e->IsControlEdge() ? -1 : e->dst_input());
      }
      std::sort(inputs.begin(), inputs.end());
      Hasher h;
      h.Add(label[node->id()]);
      for (const auto& [src, out, in] : inputs) {
        h.Add(src).Add(static_cast<uint64_t>(out)).Add(static_cast<uint64_t>(in));
      }
      next[node->id()] = h.Finish();
    }
    for (const tensorflow::Node* node : nodes) label[node->id()] = next[node->id()];
  }
  std::vector<uint64_t> final_labels;
  final_labels.reserve(nodes.size());
  for (const tensorflow::Node* node : nodes) final_labels.push_back(label[node->id()]);
  std::sort(final_labels.begin(), final_labels.end());
  Hasher h;
  h.Add(static_cast<uint64_t>(final_labels.size()));
  for (uint64_t l : final_labels) h.Add(l);
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016" PRIx64, h.Finish());
  return buf;
}

}  // namespace graphi
