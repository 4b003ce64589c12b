// Loss functions of the DSL: the scalars a training program minimizes
// (docs/training.md). Each is built from ordinary ops, so autodiff, fusion
// and the reference interpreter need nothing special for them.
#pragma once

#include "frontend/Tensor.h"

#include <source_location>

namespace kiln::nn {

/// The mean over the batch of the cross entropy between softmax(logits) and
/// the smoothed one-hot target (1 - labelSmoothing) * onehot(label) +
/// labelSmoothing / C. logits is a float [N, C], labels an i32 or i64 [N]
/// with values in [0, C) (a label outside that range matches no class and
/// contributes only the smoothing term). Computed from log_softmax, so huge
/// logits stay finite, in f32 for every float dtype but f64 (which stays f64).
/// Returns a scalar.
Tensor softmaxCrossEntropy(Tensor logits, Tensor labels, double labelSmoothing = 0.0,
                           std::source_location loc = std::source_location::current());

/// mean((prediction - target)^2) over every element, a scalar. Both tensors
/// have the same float dtype and the same shape (no broadcasting: a [N, 1]
/// prediction against an [N] target is almost always a bug). Computed in f32
/// for every float dtype but f64.
Tensor meanSquaredError(Tensor prediction, Tensor target,
                        std::source_location loc = std::source_location::current());

} // namespace kiln::nn
