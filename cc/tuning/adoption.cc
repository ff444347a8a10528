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
  if (const Adoption* own = For(load_class)) return own;
  return For(load_class == LoadClass::kAlone ? LoadClass::kUnderLoad : LoadClass::kAlone);
}

bool AdoptionSlots::empty() const { return !slots_[0].has_value() && !slots_[1].has_value(); }

SettingSource GraphSettingSource(SettingSource process_source, const Setting& in_force,
                                 const Adoption* own) {
  if (!IsAdoptedSource(process_source)) return process_source;
  const bool own_in_force = own != nullptr && own->setting.SameLayout(in_force);
  return own_in_force ? own->source : SettingSource::kDefault;
}

}  // namespace graphi
