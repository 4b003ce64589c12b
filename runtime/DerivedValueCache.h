// The derived block of a host model: values computed from parameters and constants alone
// (a filter's transpose, a packed weight panel), kept between runs and computed again only
// when a parameter they depend on gets a new value (docs/architecture.md, "Derived values").
#pragma once

#include "runtime/LaunchPlan.h"
#include "support/AlignedBytes.h"

#include <algorithm>
#include <cstdint>
#include <mutex>
#include <vector>

namespace kiln::runtime {

class DerivedValueCache {
public:
  /// Copies what it needs from `plan`: the model that owns both may move.
  explicit DerivedValueCache(const LaunchPlan &plan);

  /// Parameter `param` (an index in LaunchPlan::params) has a new value: the steps that
  /// depend on it are stale.
  void paramChanged(size_t param);
  /// Whether a derived step reads parameter `param` (directly or through another one): a run
  /// that passes its own value for it computes every derived value for itself.
  bool feedsDerivedSteps(size_t param) const { return feedsDerived_[param]; }

  /// Whether the plan has derived steps at all (without them a run needs no block or lock).
  bool hasDerivedSteps() const {
    return std::ranges::find(derivedStep_, true) != derivedStep_.end();
  }

  /// Held while a run reads the block's staleness and computes what is stale.
  std::mutex &mutex() { return mutex_; }
  /// The block (allocated on first use; throws std::bad_alloc). Under mutex().
  uint8_t *block();
  /// The derived steps a run must compute before the others read the block. Under mutex().
  std::vector<bool> staleSteps() const;
  /// `steps` (from staleSteps) now hold values of the current parameters. Under mutex().
  void markComputed(const std::vector<bool> &steps);

private:
  int64_t blockBytes_;
  std::vector<bool> derivedStep_;            ///< per step
  std::vector<std::vector<int>> stepParams_; ///< per step: PlanStep::derivedFrom
  std::mutex mutex_;
  AlignedBytes block_;
  std::vector<bool> feedsDerived_; ///< per parameter
  /// A logical clock: paramVersion_[p] is when parameter p last changed, computedAt_[s] when
  /// step s last ran (0: never); a step is current when it ran after all of its parameters.
  uint64_t clock_ = 0;
  std::vector<uint64_t> paramVersion_;
  std::vector<uint64_t> computedAt_;
};

} // namespace kiln::runtime
