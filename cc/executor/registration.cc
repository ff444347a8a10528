// Registers GraphiExecutor as executor type "GRAPHI" when the library is
// loaded (tf.load_library / import graphi_tf).
//
// ExecutorFactory::Register aborts the process on a duplicate name, so the
// registrar first asks whether "GRAPHI" is already known — loading the
// library twice (e.g. from two paths) is then harmless.
#include <memory>

#include "cc/executor/graphi_executor.h"
#include "tensorflow/core/common_runtime/executor_factory.h"

namespace graphi {
namespace {

class GraphiExecutorFactory : public tensorflow::ExecutorFactory {
 public:
  absl::Status NewExecutor(const tensorflow::LocalExecutorParams& params,
                           const tensorflow::Graph& graph,
                           std::unique_ptr<tensorflow::Executor>* out_executor) override {
    auto executor = std::make_unique<GraphiExecutor>(params);
    TF_RETURN_IF_ERROR(executor->Initialize(graph));
    *out_executor = std::move(executor);
    return absl::OkStatus();
  }
};

struct Registrar {
  Registrar() {
    tensorflow::ExecutorFactory* existing = nullptr;
    if (tensorflow::ExecutorFactory::GetFactory(kExecutorTypeName, &existing).ok()) return;
    tensorflow::ExecutorFactory::Register(kExecutorTypeName, new GraphiExecutorFactory());
  }
};
Registrar registrar;

}  // namespace

// Whether some executor factory is registered under kExecutorTypeName
// (for info()): this copy of the library's, or another copy's that was
// loaded first (the registrar then skips its own).
bool GraphiExecutorRegistered() {
  tensorflow::ExecutorFactory* existing = nullptr;
  return tensorflow::ExecutorFactory::GetFactory(kExecutorTypeName, &existing).ok();
}

}  // namespace graphi
