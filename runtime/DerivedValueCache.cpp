// Staleness of derived values by a logical clock (DerivedValueCache.h).
#include "runtime/DerivedValueCache.h"

#include <algorithm>

namespace kiln::runtime {

DerivedValueCache::DerivedValueCache(const LaunchPlan &plan)
    : blockBytes_(plan.derivedBytes), feedsDerived_(plan.params.size(), false),
      paramVersion_(plan.params.size(), 0), computedAt_(plan.steps.size(), 0) {
  for (const PlanStep &step : plan.steps) {
    derivedStep_.push_back(step.derived);
    stepParams_.push_back(step.derivedFrom);
    for (int param : step.derivedFrom)
      feedsDerived_[static_cast<size_t>(param)] = true;
  }
}

void DerivedValueCache::paramChanged(size_t param) {
  std::lock_guard lock(mutex_);
  paramVersion_[param] = ++clock_;
}

uint8_t *DerivedValueCache::block() {
  if (block_.size() != static_cast<size_t>(blockBytes_))
    block_ = AlignedBytes::uninitialized(static_cast<size_t>(blockBytes_));
  return block_.data();
}

std::vector<bool> DerivedValueCache::staleSteps() const {
  std::vector<bool> stale(derivedStep_.size(), false);
  for (size_t s = 0; s < derivedStep_.size(); ++s) {
    if (!derivedStep_[s])
      continue;
    stale[s] = computedAt_[s] == 0 || std::ranges::any_of(stepParams_[s], [&](int param) {
                 return paramVersion_[static_cast<size_t>(param)] > computedAt_[s];
               });
  }
  return stale;
}

void DerivedValueCache::markComputed(const std::vector<bool> &steps) {
  ++clock_; // after every version seen so far, so clock 0 keeps meaning "never"
  for (size_t s = 0; s < steps.size(); ++s)
    if (steps[s])
      computedAt_[s] = clock_;
}

} // namespace kiln::runtime
