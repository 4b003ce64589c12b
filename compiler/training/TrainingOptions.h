// TrainingOptions: everything that decides how a model is trained — the
// optimizer, the loss output, gradient accumulation, clipping, precision and
// loss scaling (docs/training.md, "Training step").
#pragma once

#include "compiler/Compile.h"
#include "compiler/training/Optimizer.h"
#include "runtime/Profile.h"
#include "runtime/dist/Communicator.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kiln::training {

/// Dynamic loss scaling (fp16 training): the backward pass is seeded with
/// `scale` instead of 1 so small gradients survive fp16; the gradients are
/// divided by it again before clipping and the update. A step whose gradients
/// are not all finite is skipped and the scale multiplied by `backoffFactor`;
/// after `growthInterval` finite steps in a row it is multiplied by
/// `growthFactor`.
struct LossScaleOptions {
  enum class Mode {
    Auto,    ///< dynamic for the fp16-mixed precision policy, off otherwise
    Off,     ///< no scaling: gradients are applied whatever they hold
    Dynamic, ///< dynamic scaling with any precision
  };
  Mode mode = Mode::Auto;
  double initialScale = 65536.0;
  double growthFactor = 2.0;
  double backoffFactor = 0.5;
  int64_t growthInterval = 2000;
};

struct TrainingOptions {
  OptimizerOptions optimizer;
  /// The model output holding the scalar loss.
  std::string lossOutput = "loss";
  /// k > 1: each step takes k micro-batches, sums their gradients and updates
  /// once with the mean, as one step on their concatenation would.
  int64_t accumulationSteps = 1;
  /// Scale the gradients so their global L2 norm is at most this (none: no
  /// clipping).
  std::optional<double> clipGlobalNorm;
  LossScaleOptions lossScale;
  /// Data parallel (a communicator of several ranks): gradients are summed
  /// across the ranks in buckets, filled in the order the backward pass
  /// produces them; a bucket closes once it holds this many bytes. The first
  /// is small, so the first all-reduce can start early (PyTorch DDP's 1 MiB and
  /// 25 MiB).
  int64_t firstBucketBytes = int64_t{1} << 20;
  int64_t bucketBytes = int64_t{25} << 20;
  /// Keep going when a step's loss or gradient norm is not finite (by default
  /// such a step is an error naming it). Steps the loss scaler skips are
  /// never errors: they changed nothing.
  bool allowNonFinite = false;
  /// Target and precision (compile.precision: fp32, tf32, bf16-mixed or
  /// fp16-mixed; parameters and optimizer state stay f32 master copies, the
  /// policy lowers the contractions of forward and backward alike).
  CompileOptions compile;
  /// Data parallel: the ranks whose gradients this trainer averages (null: one
  /// process). Each step's batch is this rank's shard of the global batch.
  std::shared_ptr<runtime::dist::Communicator> communicator;
  /// When set, every run of a training program (the step, or the gradient
  /// and update programs) appends its profile here: kernels and, on the
  /// host, the all-reduces on the communication thread (docs/profiling.md).
  std::vector<runtime::RunProfile> *profiles = nullptr;

  /// Whether dynamic loss scaling is on for these options.
  bool lossScaling() const {
    return lossScale.mode == LossScaleOptions::Mode::Dynamic ||
           (lossScale.mode == LossScaleOptions::Mode::Auto &&
            compile.precision == passes::PrecisionPolicy::Fp16Mixed);
  }
  /// Whether gradients are summed across several ranks.
  bool dataParallel() const { return communicator && communicator->size() > 1; }
};

/// Checks the options' ranges; errors name the option.
Expected<void> validateTrainingOptions(const TrainingOptions &options);

} // namespace kiln::training
