// The setting in force, decided in one place.
//
// ResolveSetting is a pure function from everything that may ask for a
// setting to the one that wins and where it came from. The layout's
// precedence, highest first:
//
//   configure()  >  environment  >  autotune (the autotuner's visit)
//                >  adopted (cache, tune(), autotuner)  >  default
//
// and the policy's: configure() > GRAPHI_POLICY > adopted >
// critical_path_first (fifo with GRAPHI_TUNE=0). configure() always names
// teams; the environment (GRAPHI_EXECUTORS=stock), the autotuner's visit and
// an adopted setting may be "stock". A layout that gives only E or only T
// gets the other from the machine's usable cores. An invalid GRAPHI_*
// variable is an error whatever else is in force: steps must not run with a
// value the user did not ask for.
//
// The Runtime (runtime.h) holds the inputs and calls this on every change.
//
// Free of TensorFlow types. Thread-safety: pure functions.
#ifndef GRAPHI_TF_CC_EXECUTOR_SETTING_RESOLVER_H_
#define GRAPHI_TF_CC_EXECUTOR_SETTING_RESOLVER_H_

#include <string>

#include "cc/platform/env_settings.h"
#include "cc/teams/setting.h"

namespace graphi {

struct SettingInputs {
  Setting configured;                // configure(): E and/or T, and/or a policy; never stock
  GraphiEnvironment environment;     // the snapshot (env_settings.h)
  Setting exploring;                 // the autotuner's visit (a layout or stock), or none
  Setting adopted;                   // the adopted setting in force, or none
  SettingSource adopted_source = SettingSource::kCache;
  Setting default_setting;           // complete teams: one per tile (team_layout.h)
  int usable_cores = 1;
};

struct ResolvedSetting {
  Setting setting;        // complete, policy set: stock, or E x T
  SettingSource source = SettingSource::kDefault;  // of the layout
  // The teams to build: the setting's; for stock, the default's (built only
  // for a step that still asks for teams, e.g. one nested on a team thread).
  Setting teams;
};

// The setting in force. False with *error (naming the setting and its
// allowed values) when a GRAPHI_* variable is invalid.
bool ResolveSetting(const SettingInputs& inputs, ResolvedSetting* out, std::string* error);

// What the environment asks for: a layout (or stock) and a policy, or
// nothing. False with *error for an invalid variable or combination.
bool EnvironmentSetting(const GraphiEnvironment& env, Setting* out, std::string* error);

// Whether configure() or the environment names the layout; an invalid
// layout variable counts (steps fail with its error anyway).
bool LayoutIsExplicit(const SettingInputs& inputs);

// GRAPHI_AUTOTUNE, with GRAPHI_TUNE=0 also turning it off. False with
// *error for an invalid value.
bool AutotuneFromEnvironment(const GraphiEnvironment& env, bool* on, std::string* error);

}  // namespace graphi

#endif  // GRAPHI_TF_CC_EXECUTOR_SETTING_RESOLVER_H_
