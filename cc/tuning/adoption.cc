#include "cc/tuning/adoption.h"

namespace graphi {

void AdoptionSlots::Set(const Adoption& adoption) {
  slots_[static_cast<int>(adoption.load_class)] = adoption;
}

const Adoption* AdoptionSlots::For(LoadClass load_class) const {
  const std::optional<Adoption>& slot = slots_[static_cast<int>(load_class)];
  return slot.has_value() ? &*slot : nullptr;
}

const Adoption* AdoptionSlots::InForce(LoadClass load_class) const {
  const int c = static_cast<int>(load_class);
  for (int distance = 0; distance < kLoadClassCount; ++distance) {
    for (int other : {c - distance, c + distance}) {
      if (other < 0 || other >= kLoadClassCount) continue;
      if (const Adoption* adoption = For(static_cast<LoadClass>(other))) return adoption;
    }
  }
  return nullptr;
}

bool AdoptionSlots::empty() const {
  for (const std::optional<Adoption>& slot : slots_) {
    if (slot.has_value()) return false;
  }
  return true;
}

SettingSource GraphSettingSource(SettingSource process_source, const Setting& in_force,
                                 const Adoption* own) {
  if (!IsAdoptedSource(process_source)) return process_source;
  const bool own_in_force = own != nullptr && own->setting.SameLayout(in_force);
  return own_in_force ? own->source : SettingSource::kDefault;
}

}  // namespace graphi
