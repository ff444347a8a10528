// StockPools: the inter-op and intra-op pools of a stock point
// (Setting "stock:IxA"): TensorFlow's own executor runs a step's ops on an
// inter-op pool of I threads, and its kernels split their work over an
// intra-op pool of A threads. Both are plain Eigen pools, unpinned, as the
// pools TensorFlow makes for inter_op_parallelism_threads=I and
// intra_op_parallelism_threads=A: a stock point is that configuration,
// reached without a new process, so the autotuner can compare it with the
// team layouts (docs/design.md, "Stock points").
//
// The executor layer attaches its TensorFlow view of the intra-op pool once
// (Attach), since kernels need TensorFlow types this layer does not use.
//
// A step's ops go to the inter-op pool through ScheduleOp, which runs each as
// an op of its step (step_order.h) without wrapping it in another closure:
// the step's number travels in Eigen's task beside the closure, and each
// inter-op thread knows its StockPools (OfCurrentThread) for the intra-op
// view. A closure per op more was a heap allocation per op more than
// TensorFlow's own runner (docs/design.md, "Stock points").
//
// Their threads may run on every usable CPU, whatever thread made the pools:
// the autotuner switches settings from the thread that ends a step, often a
// pinned team thread, whose one-CPU mask new threads would inherit (a stock
// point made there ran as if on one core; docs/design.md, "Stock points").
//
// Pools are shared: the Runtime holds a point's pools while it may be
// visited or is in force, and each step on them holds them until its done
// callback has returned, so a step never outlives its pools. The last holder
// may be a task on one of their own threads (a step's done callback runs on
// the inter-op pool); joining those threads from one of them would fail, so
// destruction then moves to a short-lived thread of its own (Create).
//
// Free of TensorFlow types (the intra-op pool derives from TensorFlow's
// ThreadPoolInterface, an Eigen interface, as TeamThreadPool does).
// Thread-safety: thread-safe.
#ifndef GRAPHI_TF_CC_TEAMS_STOCK_POOLS_H_
#define GRAPHI_TF_CC_TEAMS_STOCK_POOLS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <vector>

#include "tensorflow/core/platform/threadpool_interface.h"
#include "unsupported/Eigen/CXX11/ThreadPool"

namespace graphi {

class StockPools {
 public:
  // What the executor layer keeps beside the pools (its view of them).
  class Attachment {
   public:
    virtual ~Attachment() = default;
  };

  // An Eigen pool of `threads` threads, named `name`-<i>, each allowed on
  // all of `cpus` (none given: the mask they inherit). Its threads report
  // `owner` as OfCurrentThread (null: none) and belong to `member_of`
  // (OnOwnThread). A task runs as an op of the step that ScheduleOp gave
  // it, or of none.
  class Pool final : public tensorflow::thread::ThreadPoolInterface {
   public:
    Pool(int threads, const char* name, const std::vector<int>& cpus, StockPools* owner,
         const StockPools* member_of);
    ~Pool() override;
    void Schedule(std::function<void()> fn) override;
    void ScheduleWithHint(std::function<void()> fn, int start, int end) override;
    void Cancel() override;
    int NumThreads() const override { return num_threads_; }
    int CurrentThreadId() const override;

   private:
    struct NamedEnvironment;
    const int num_threads_;
    std::unique_ptr<Eigen::ThreadPoolTempl<NamedEnvironment>> pool_;
  };

  // Starts the pools; `cpus`: the process's usable CPUs. The returned
  // pointer may be released on any thread, their own included (see above).
  static std::shared_ptr<StockPools> Create(int inter_op_threads, int intra_op_threads,
                                            const std::vector<int>& cpus);
  ~StockPools();
  StockPools(const StockPools&) = delete;
  StockPools& operator=(const StockPools&) = delete;

  int inter_op_threads() const { return inter_op_.NumThreads(); }
  int intra_op_threads() const { return intra_op_.NumThreads(); }
  Pool* inter_op_pool() { return &inter_op_; }
  Pool* intra_op_pool() { return &intra_op_; }

  // Runs `op` on the inter-op pool as an op of step `step_order`
  // (ScopedStepOrder while it runs).
  void ScheduleOp(std::function<void()> op, uint64_t step_order);

  // The StockPools whose inter-op thread calls this, or null.
  static StockPools* OfCurrentThread();
  // Whether the calling thread is one of these pools' (inter-op or intra-op).
  bool OnOwnThread() const;

  // The attachment `make` builds on the first call; later calls return it.
  Attachment* Attach(const std::function<std::unique_ptr<Attachment>()>& make);
  // The attachment, or null before Attach. Safe where Attach happened before
  // (e.g. in an op the caller of Attach scheduled).
  Attachment* attachment() const { return attachment_.get(); }

 private:
  StockPools(int inter_op_threads, int intra_op_threads, const std::vector<int>& cpus);

  // Destroyed in reverse: the inter-op pool's threads are joined first, then
  // the attachment (which refers to the intra-op pool), then that pool.
  Pool intra_op_;
  std::once_flag attach_once_;
  std::unique_ptr<Attachment> attachment_;
  Pool inter_op_;
};

}  // namespace graphi

#endif  // GRAPHI_TF_CC_TEAMS_STOCK_POOLS_H_
