// How kernels of a stock point (Setting "stock:IxA", stock_pools.h) get its
// intra-op pool.
//
// TensorFlow's executor takes one device when it is built and gives it to
// every kernel. GraphiExecutor builds, beside the stock executor of plain
// "stock" (on the executor's own device), one stock point executor per
// graph; its device is a StockPointDevice, which forwards everything to the
// executor's own device except the intra-op pool: a kernel running on a
// stock point's inter-op thread (StockPools::OfCurrentThread), or inside a
// ScopedIntraOpPoolView, gets that stock point's intra-op pool, any other
// kernel the device's own. So one executor serves every stock point, with
// the same kernels as plain stock.
//
// Thread-safety: IntraOpPoolView and StockPointDevice are immutable after
// construction; the current view is per thread.
#ifndef GRAPHI_TF_CC_EXECUTOR_STOCK_POINT_DEVICE_H_
#define GRAPHI_TF_CC_EXECUTOR_STOCK_POINT_DEVICE_H_

#include <memory>

#include "cc/teams/stock_pools.h"
#include "tensorflow/core/common_runtime/device.h"
#include "tensorflow/core/platform/threadpool.h"

namespace graphi {

// A stock point's intra-op pool in TensorFlow's types, attached to its
// StockPools once (IntraOpPoolViewOf).
class IntraOpPoolView final : public StockPools::Attachment {
 public:
  explicit IntraOpPoolView(StockPools* pools);
  ~IntraOpPoolView() override;

  const tensorflow::DeviceBase::CpuWorkerThreads* workers() const { return &workers_; }
  const Eigen::ThreadPoolDevice* eigen_device() const { return eigen_device_.get(); }
  tensorflow::thread::ThreadPool* thread_pool() const { return thread_pool_.get(); }

 private:
  std::unique_ptr<tensorflow::thread::ThreadPool> thread_pool_;  // wraps the intra-op pool
  tensorflow::DeviceBase::CpuWorkerThreads workers_;
  std::unique_ptr<Eigen::ThreadPoolDevice> eigen_device_;
};

// The view of `pools`, made on first use and kept with the pools.
IntraOpPoolView* IntraOpPoolViewOf(StockPools* pools);

// The stock point whose intra-op pool this thread's kernels use: the
// innermost ScopedIntraOpPoolView's, else that of the stock point whose
// inter-op thread this is; null elsewhere.
const IntraOpPoolView* CurrentIntraOpPoolView();

class ScopedIntraOpPoolView {
 public:
  explicit ScopedIntraOpPoolView(const IntraOpPoolView* view);
  ~ScopedIntraOpPoolView();
  ScopedIntraOpPoolView(const ScopedIntraOpPoolView&) = delete;
  ScopedIntraOpPoolView& operator=(const ScopedIntraOpPoolView&) = delete;

 private:
  const IntraOpPoolView* const previous_;
};

// The stock executor's device: `base` in all but the intra-op pool (above).
// `base` must outlive it.
class StockPointDevice final : public tensorflow::Device {
 public:
  explicit StockPointDevice(tensorflow::Device* base);
  ~StockPointDevice() override;

  const tensorflow::DeviceBase::CpuWorkerThreads* tensorflow_cpu_worker_threads() const override;
  const Eigen::ThreadPoolDevice* eigen_cpu_device() override;
  tensorflow::thread::ThreadPool* tensorflow_device_thread_pool() override;

  const tensorflow::DeviceBase* UnderlyingDevice() const override {
    return base_->UnderlyingDevice();
  }
  tensorflow::DeviceBase* UnderlyingDevice() override { return base_->UnderlyingDevice(); }
  const AcceleratorDeviceInfo* tensorflow_accelerator_device_info() const override {
    return base_->tensorflow_accelerator_device_info();
  }
  tensorflow::Allocator* GetAllocator(tensorflow::AllocatorAttributes attr) override {
    return base_->GetAllocator(attr);
  }
  tensorflow::Allocator* GetScopedAllocator(tensorflow::AllocatorAttributes attr,
                                            int64_t step_id) override {
    return base_->GetScopedAllocator(attr, step_id);
  }
  tensorflow::ScopedAllocatorMgr* GetScopedAllocatorMgr() const override {
    return base_->GetScopedAllocatorMgr();
  }
  bool has_eigen_cpu_device() const override { return base_->has_eigen_cpu_device(); }
  tensorflow::PerOpGpuDevice* MakeGpuDevice() override { return base_->MakeGpuDevice(); }
  absl::Status ReinitializeGpuDevice(tensorflow::OpKernelContext* context,
                                     tensorflow::PerOpGpuDevice* device,
                                     tensorflow::DeviceContext* dc,
                                     tensorflow::Allocator* allocator) override {
    return base_->ReinitializeGpuDevice(context, device, dc, allocator);
  }
  absl::Status MakeTensorFromProto(const tensorflow::TensorProto& tensor_proto,
                                   const tensorflow::AllocatorAttributes alloc_attrs,
                                   tensorflow::Tensor* tensor) override {
    return base_->MakeTensorFromProto(tensor_proto, alloc_attrs, tensor);
  }
  void CopyTensorInSameDevice(const tensorflow::Tensor* input_tensor,
                              tensorflow::Tensor* output_tensor,
                              const tensorflow::DeviceContext* device_context,
                              tensorflow::StatusCallback done) override {
    base_->CopyTensorInSameDevice(input_tensor, output_tensor, device_context, std::move(done));
  }
  void Compute(tensorflow::OpKernel* op_kernel, tensorflow::OpKernelContext* context) override {
    base_->Compute(op_kernel, context);
  }
  void ComputeAsync(tensorflow::AsyncOpKernel* op_kernel, tensorflow::OpKernelContext* context,
                    tensorflow::AsyncOpKernel::DoneCallback done) override {
    base_->ComputeAsync(op_kernel, context, std::move(done));
  }
  absl::Status Sync() override { return base_->Sync(); }
  absl::Status MaybeRewriteGraph(std::unique_ptr<tensorflow::Graph>* graph) override {
    return base_->MaybeRewriteGraph(graph);
  }
  absl::Status TryGetDeviceContext(tensorflow::DeviceContext** out_context) override {
    return base_->TryGetDeviceContext(out_context);
  }
  tensorflow::ResourceMgr* resource_manager() override { return base_->resource_manager(); }
  bool IsLocal() const override { return base_->IsLocal(); }
  bool IsRemoteCallAllowed() const override { return base_->IsRemoteCallAllowed(); }

 private:
  tensorflow::Device* const base_;
};

}  // namespace graphi

#endif  // GRAPHI_TF_CC_EXECUTOR_STOCK_POINT_DEVICE_H_
