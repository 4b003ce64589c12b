// The range checks of TrainingOptions.
#include "compiler/training/TrainingOptions.h"

#include <cmath>
#include <fmt/format.h>

namespace kiln::training {

Expected<void> validateTrainingOptions(const TrainingOptions &options) {
  auto bad = [](std::string message) {
    return makeError(ErrorCode::InvalidArgument, "training: " + message);
  };
  KILN_TRY_VOID(validateOptimizer(options.optimizer));
  if (options.accumulationSteps < 1)
    return bad(fmt::format("accumulationSteps must be >= 1, got {}", options.accumulationSteps));
  if (options.clipGlobalNorm && !(*options.clipGlobalNorm > 0))
    return bad(fmt::format("clipGlobalNorm must be > 0, got {}", *options.clipGlobalNorm));
  if (options.firstBucketBytes < 1 || options.bucketBytes < 1)
    return bad(fmt::format("firstBucketBytes and bucketBytes must be >= 1, got {} and {}",
                           options.firstBucketBytes, options.bucketBytes));
  if (options.compile.precision == passes::PrecisionPolicy::Fp8)
    return bad("the fp8 precision policy is for inference; train with fp32, tf32, bf16-mixed "
               "or fp16-mixed");
  const LossScaleOptions &scale = options.lossScale;
  if (options.lossScaling() &&
      (!(scale.initialScale > 0) || !std::isfinite(scale.initialScale) ||
       !(scale.growthFactor >= 1) || !(scale.backoffFactor > 0 && scale.backoffFactor < 1) ||
       scale.growthInterval < 1))
    return bad(fmt::format("loss scale options need initialScale > 0 (got {}), growthFactor >= "
                           "1 (got {}), backoffFactor in (0, 1) (got {}), growthInterval >= 1 "
                           "(got {})",
                           scale.initialScale, scale.growthFactor, scale.backoffFactor,
                           scale.growthInterval));
  return {};
}

} // namespace kiln::training
