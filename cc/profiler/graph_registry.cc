#include "cc/profiler/graph_registry.h"

#include "cc/util/clock.h"

namespace graphi {

GraphProfile::GraphProfile(std::string signature, std::vector<std::string> node_names,
                           std::vector<std::vector<int>> successors,
                           std::vector<std::string> node_types)
    : signature_(std::move(signature)),
      node_names_(std::move(node_names)),
      node_types_(std::move(node_types)),
      costs_(std::move(successors)) {}

bool GraphProfile::TakeTimingTurn() {
  int64_t step = 0;
  const bool turn = timing_sampler_.TakeTurn(&step);
  if (step == timing_sampler_.timed_warmup_steps()) {
    timing_sampler_.set_stride(StrideForOpCost(costs_.MeanEstimate(), ClockReadCostNs()));
  }
  return turn;
}

void GraphProfile::StepFinished() {
  const int64_t n = steps_run_.fetch_add(1, std::memory_order_relaxed) + 1;
  const bool power_of_two = (n & (n - 1)) == 0;
  if ((power_of_two && n <= 1024) || n % 256 == 0) costs_.RefreshRanks();
}

bool GraphProfile::ApplyAdoption(const Adoption& adoption) {
  bool applied_costs = false;
  if (adoption.node_names == node_names_ && costs_.SetEstimates(adoption.node_costs_ns)) {
    costs_.RefreshRanks();
    applied_costs = true;
  }
  MutexLock l(&mu_);
  adoptions_.Set(adoption);
  return applied_costs;
}

bool GraphProfile::BeginTopLevelStep(uint64_t* epoch, int* in_flight) {
  const int before = top_level_in_flight_.fetch_add(1, std::memory_order_acq_rel);
  *in_flight = before + 1;
  const bool overlapping = before > 0;
  if (overlapping) overlap_epoch_.fetch_add(1, std::memory_order_acq_rel);
  *epoch = overlap_epoch_.load(std::memory_order_acquire);
  return overlapping;
}

bool GraphProfile::EndTopLevelStep(uint64_t epoch) {
  top_level_in_flight_.fetch_sub(1, std::memory_order_acq_rel);
  return overlap_epoch_.load(std::memory_order_acquire) != epoch;
}

TopLevelStepEnd GraphProfile::NoteTopLevelStepEnd(bool overlapped) {
  MutexLock l(&mu_);
  TopLevelStepEnd out;
  out.load_class_changed = load_.Note(overlapped);
  out.load_class = load_.current();
  for (int c = 0; c < kLoadClassCount; ++c) {
    out.adopted[c] = adoptions_.For(static_cast<LoadClass>(c)) != nullptr;
  }
  return out;
}

LoadClass GraphProfile::load_class() const {
  MutexLock l(&mu_);
  return load_.current();
}

void GraphProfile::ClearAdoption() {
  MutexLock l(&mu_);
  adoptions_ = AdoptionSlots();
}

bool GraphProfile::adoption(Adoption* out) const {
  MutexLock l(&mu_);
  const Adoption* in_force = adoptions_.InForce(load_.current());
  if (in_force == nullptr) return false;
  *out = *in_force;
  return true;
}

void GraphProfile::SetLastTimeline(StepTimeline timeline) {
  timeline.step = steps_run();
  MutexLock l(&mu_);
  last_timeline_ = std::move(timeline);
}

StepTimeline GraphProfile::LastStep() const {
  MutexLock l(&mu_);
  return last_timeline_;
}

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
    profile->RecordStepsThrough(record_through_step_);
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
    // Another class's adoption stays in force while the graph is in it.
    Adoption in_force;
    if (profile->adoption(&in_force) && in_force.load_class == adoption.load_class) {
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
  if (profile.adoption(&in_force)) Forward(profile, in_force, /*newly_adopted=*/false);
}

void GraphRegistry::ClearAdoptions() {
  std::vector<std::shared_ptr<GraphProfile>> profiles;
  {
    MutexLock l(&mu_);
    adoptions_.clear();
    for (const auto& kv : profiles_) profiles.push_back(kv.second);
  }
  for (const auto& p : profiles) p->ClearAdoption();
  AdoptionListener* listener = listener_.load(std::memory_order_acquire);
  if (listener != nullptr) listener->OnAdoptionsCleared();
}

void GraphRegistry::RecordStepsThrough(int64_t step) {
  MutexLock l(&mu_);
  record_through_step_ = step;
  for (const auto& kv : profiles_) kv.second->RecordStepsThrough(step);
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
