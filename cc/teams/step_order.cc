#include "cc/teams/step_order.h"

#include <atomic>

namespace graphi {
namespace {

std::atomic<uint64_t> next_step_order{kNoStepOrder + 1};
thread_local uint64_t tls_step_order = kNoStepOrder;

}  // namespace

uint64_t StepOrderForNewStep() {
  if (tls_step_order != kNoStepOrder) return tls_step_order;
  return next_step_order.fetch_add(1, std::memory_order_relaxed);
}

uint64_t CurrentStepOrder() { return tls_step_order; }

ScopedStepOrder::ScopedStepOrder(uint64_t order) : saved_(tls_step_order) {
  tls_step_order = order;
}

ScopedStepOrder::~ScopedStepOrder() { tls_step_order = saved_; }

}  // namespace graphi
