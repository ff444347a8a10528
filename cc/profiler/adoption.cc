#include "cc/profiler/adoption.h"

namespace graphi {

std::string GraphSettingSource(const std::string& process_source, int executors,
                               int threads_per_executor, const Adoption* own) {
  const bool adopted =
      process_source == "cache" || process_source == "tuned" || process_source == "autotuned";
  if (!adopted) return process_source;
  const bool own_in_force = own != nullptr && own->setting.executors == executors &&
                            own->setting.threads_per_executor == threads_per_executor;
  return own_in_force ? own->source : "default";
}

}  // namespace graphi
