#include "cc/profiler/graph_registry.h"


namespace graphi {

GraphRegistry& GraphRegistry::Get() {
  static GraphRegistry* registry = new GraphRegistry();
  return *registry;
}

void GraphRegistry::SetAdoptionListener(AdoptionListener* listener) {
  listener_.store(listener, std::memory_order_release);
}

void GraphRegistry::Forward(const GraphProfile& profile, const Adoption& adoption,
                            bool newly_adopted) {
  AdoptionListener* listener = listener_.load(std::memory_order_acquire);
  if (listener != nullptr) listener->OnAdopted(adoption, profile.node_count(), newly_adopted);
}

std::shared_ptr<GraphProfile> GraphRegistry::Register(const std::string& signature,
                                                      std::vector<std::string> node_names,
                                                      std::vector<std::vector<int>> successors,
                                                      std::vector<std::string> node_types) {
  std::shared_ptr<GraphProfile> profile;
  AdoptionSlots slots;
  {
    MutexLock l(&mu_);
    auto it = profiles_.find(signature);
    if (it != profiles_.end() && it->second->node_names() == node_names) return it->second;
    profile = std::make_shared<GraphProfile>(signature, std::move(node_names),
                                             std::move(successors), std::move(node_types));
    profile->recorder().RecordThrough(record_through_step_);
    profiles_[signature] = profile;
    auto a = adoptions_.find(signature);
    if (a != adoptions_.end()) slots = a->second;
  }
  for (int c = 0; c < kLoadClassCount; ++c) {
    if (const Adoption* adoption = slots.For(static_cast<LoadClass>(c))) {
      profile->ApplyAdoption(*adoption);
    }
  }
  // A new graph is in kAlone until its steps overlap.
  if (const Adoption* in_force = slots.InForce(LoadClass::kAlone)) {
    Forward(*profile, *in_force, /*newly_adopted=*/true);
  }
  return profile;
}

bool GraphRegistry::Adopt(const std::string& signature, const Adoption& adoption) {
  std::shared_ptr<GraphProfile> profile;
  {
    MutexLock l(&mu_);
    adoptions_[signature].Set(adoption);
    auto it = profiles_.find(signature);
    if (it != profiles_.end()) profile = it->second;
  }
  bool applied = false;
  if (profile != nullptr) {
    applied = profile->ApplyAdoption(adoption);
    // Another class's adoption stays in force while the graph is in that class.
    Adoption in_force;
    if (profile->load().InForce(&in_force) && in_force.load_class == adoption.load_class) {
      Forward(*profile, adoption, /*newly_adopted=*/true);
    }
  } else {
    // Not seen yet: the layout follows when the graph's executor registers,
    // so importing a cache full of entries does not re-partition the teams.
  }
  return applied;
}

void GraphRegistry::LoadClassChanged(const GraphProfile& profile) {
  Adoption in_force;
  if (profile.load().InForce(&in_force)) Forward(profile, in_force, /*newly_adopted=*/false);
}

void GraphRegistry::ClearAdoptions() {
  std::vector<std::shared_ptr<GraphProfile>> profiles;
  {
    MutexLock l(&mu_);
    adoptions_.clear();
    for (const auto& kv : profiles_) profiles.push_back(kv.second);
  }
  for (const auto& p : profiles) p->load().ClearAdoptions();
  AdoptionListener* listener = listener_.load(std::memory_order_acquire);
  if (listener != nullptr) listener->OnAdoptionsCleared();
}

void GraphRegistry::RecordStepsThrough(int64_t step) {
  MutexLock l(&mu_);
  record_through_step_ = step;
  for (const auto& kv : profiles_) kv.second->recorder().RecordThrough(step);
}

std::vector<std::shared_ptr<GraphProfile>> GraphRegistry::List() const {
  MutexLock l(&mu_);
  std::vector<std::shared_ptr<GraphProfile>> out;
  for (const auto& kv : profiles_) out.push_back(kv.second);
  return out;
}

std::shared_ptr<GraphProfile> GraphRegistry::Find(const std::string& signature) const {
  MutexLock l(&mu_);
  auto it = profiles_.find(signature);
  return it == profiles_.end() ? nullptr : it->second;
}

}  // namespace graphi
