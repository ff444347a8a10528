#include "cc/executor/process_autotuner.h"

#include <algorithm>
#include <memory>
#include <string>

#include "cc/executor/runtime.h"
#include "cc/teams/team_layout.h"
#include "cc/profiler/graph_registry.h"

namespace graphi {
namespace {

class RuntimeLayoutControl final : public LayoutControl {
 public:
  bool AutotuneEnabled() override { return Runtime::Get().AutotuneEnabled(); }
  bool ExplicitLayout() override { return Runtime::Get().ExplicitLayout(); }
  void Explore(const Setting& setting) override { Runtime::Get().SetExploring(setting); }
  void StopExploring() override { Runtime::Get().ClearExploring(); }
  void Adopt(const std::string& signature, const Setting& chosen, LoadClass load_class) override {
    Adoption adoption;
    adoption.setting = chosen;
    adoption.source = SettingSource::kAutotuned;
    adoption.load_class = load_class;
    if (std::shared_ptr<GraphProfile> profile = GraphRegistry::Get().Find(signature)) {
      adoption.node_costs_ns = profile->costs().Estimates();
      adoption.node_names = profile->node_names();
    }
    GraphRegistry::Get().Adopt(signature, adoption);
  }
};

}  // namespace

Autotuner& ProcessAutotuner() {
  static Autotuner* autotuner = [] {
    const Topology& topology = Runtime::Get().topology();
    AutotuneOptions options;
    const Setting one_team_per_tile = DefaultSetting(topology);
    options.candidates = TuningCandidates(topology);
    if (std::find(options.candidates.begin(), options.candidates.end(), one_team_per_tile) ==
        options.candidates.end()) {
      options.candidates.push_back(one_team_per_tile);
    }
    // TensorFlow's executor on pools GRAPHI sizes: where stock's best point
    // is not its default, the autotuner can reach it (docs/tuning.md).
    for (const Setting& point : StockPointCandidates(topology)) options.candidates.push_back(point);
    // Do no harm against what the user had before GRAPHI: TensorFlow's own
    // pools are the reference, and another setting is adopted only where it
    // beats them by more than its spread (kept: the graph runs on them).
    options.candidates.push_back(kStockSetting);
    options.default_setting = kStockSetting;
    static RuntimeLayoutControl* control = new RuntimeLayoutControl();
    return new Autotuner(std::move(options), control);
  }();
  return *autotuner;
}

}  // namespace graphi
