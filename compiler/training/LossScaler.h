// LossScaler: the host side of dynamic loss scaling — the current scale and
// the count of finite steps since it last changed.
#pragma once

#include "compiler/training/TrainingOptions.h"

#include <cstdint>

namespace kiln::training {

class LossScaler {
public:
  /// `enabled` false: the scale stays 1 and every step counts as finite.
  LossScaler(const LossScaleOptions &options, bool enabled)
      : options_(options), enabled_(enabled), scale_(enabled ? options.initialScale : 1.0) {}

  bool enabled() const { return enabled_; }
  double scale() const { return scale_; }
  int64_t goodSteps() const { return goodSteps_; }

  /// Records a step's outcome: a non-finite step backs the scale off and
  /// restarts the count; `growthInterval` finite steps in a row grow it.
  void update(bool gradsFinite) {
    if (!enabled_)
      return;
    if (!gradsFinite) {
      scale_ *= options_.backoffFactor;
      goodSteps_ = 0;
      return;
    }
    if (++goodSteps_ >= options_.growthInterval) {
      scale_ *= options_.growthFactor;
      goodSteps_ = 0;
    }
  }

  /// Restores a checkpointed state; without scaling the scale stays 1.
  void restore(double scale, int64_t goodSteps) {
    if (!enabled_)
      return;
    scale_ = scale;
    goodSteps_ = goodSteps;
  }

private:
  LossScaleOptions options_;
  bool enabled_;
  double scale_;
  int64_t goodSteps_ = 0;
};

} // namespace kiln::training
