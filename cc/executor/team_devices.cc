#include "cc/executor/team_devices.h"

#include "tensorflow/core/common_runtime/renamed_device.h"

namespace graphi {

TeamDevices::TeamDevices(tensorflow::Device* device, TeamSet* teams)
    : base_(device), teams_(teams), generation_(teams->generation()) {
  for (int k = 0; k < teams_->num_teams(); ++k) {
    per_team_.push_back(tensorflow::RenamedDevice::NewRenamedDevice(
        device->name(), device, /*owns_underlying=*/false,
        /*isolate_session_state=*/false, teams_->team_pool(k)));
  }
  for (int k = 0; k < teams_->num_teams(); ++k) {
    if (teams_->work_conserving_pool(k) == nullptr) break;
    wide_.push_back(tensorflow::RenamedDevice::NewRenamedDevice(
        device->name(), device, /*owns_underlying=*/false,
        /*isolate_session_state=*/false, teams_->work_conserving_pool(k)));
  }
}

}  // namespace graphi
