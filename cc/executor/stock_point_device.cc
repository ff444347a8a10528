#define EIGEN_USE_THREADS
#include "cc/executor/stock_point_device.h"

#include "unsupported/Eigen/CXX11/Tensor"

namespace graphi {
namespace {

thread_local const IntraOpPoolView* current_view = nullptr;

}  // namespace

IntraOpPoolView::IntraOpPoolView(StockPools* pools)
    : thread_pool_(std::make_unique<tensorflow::thread::ThreadPool>(pools->intra_op_pool())),
      eigen_device_(std::make_unique<Eigen::ThreadPoolDevice>(pools->intra_op_pool(),
                                                              pools->intra_op_threads())) {
  workers_.num_threads = pools->intra_op_threads();
  workers_.workers = thread_pool_.get();
}

IntraOpPoolView::~IntraOpPoolView() = default;

IntraOpPoolView* IntraOpPoolViewOf(StockPools* pools) {
  return static_cast<IntraOpPoolView*>(
      pools->Attach([pools] { return std::make_unique<IntraOpPoolView>(pools); }));
}

const IntraOpPoolView* CurrentIntraOpPoolView() {
  if (current_view != nullptr) return current_view;
  // A stock point's inter-op thread: its view was attached before the step
  // that scheduled the op began (RunOnStockExecutor).
  const StockPools* pools = StockPools::OfCurrentThread();
  return pools != nullptr ? static_cast<const IntraOpPoolView*>(pools->attachment()) : nullptr;
}

ScopedIntraOpPoolView::ScopedIntraOpPoolView(const IntraOpPoolView* view)
    : previous_(current_view) {
  current_view = view;
}

ScopedIntraOpPoolView::~ScopedIntraOpPoolView() { current_view = previous_; }

StockPointDevice::StockPointDevice(tensorflow::Device* base)
    : tensorflow::Device(base->env(), base->attributes()), base_(base) {}

StockPointDevice::~StockPointDevice() = default;

const tensorflow::DeviceBase::CpuWorkerThreads* StockPointDevice::tensorflow_cpu_worker_threads()
    const {
  const IntraOpPoolView* view = CurrentIntraOpPoolView();
  return view != nullptr ? view->workers() : base_->tensorflow_cpu_worker_threads();
}

const Eigen::ThreadPoolDevice* StockPointDevice::eigen_cpu_device() {
  const IntraOpPoolView* view = CurrentIntraOpPoolView();
  return view != nullptr ? view->eigen_device() : base_->eigen_cpu_device();
}

tensorflow::thread::ThreadPool* StockPointDevice::tensorflow_device_thread_pool() {
  const IntraOpPoolView* view = CurrentIntraOpPoolView();
  return view != nullptr ? view->thread_pool() : base_->tensorflow_device_thread_pool();
}

}  // namespace graphi
