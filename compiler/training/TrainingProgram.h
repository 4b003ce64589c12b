// The training program as graph IR: the model's forward pass, its gradients
// (passes/graph/Autodiff.h), loss-scale removal, the finite check, clipping
// by global norm and the optimizer updates, built into one graph — or, with
// gradient accumulation, into a gradient graph and an update graph.
#pragma once

#include "compiler/training/TrainingOptions.h"
#include "frontend/Graph.h"
#include "ir/graph/Graph.h"

#include <memory>
#include <string>
#include <vector>

namespace kiln::training {

/// Names the training program adds. All start with "train.", which a model's
/// own inputs, parameters and outputs may not use.
inline constexpr std::string_view kReservedPrefix = "train.";
/// Input: the loss scale, seeding the backward pass (loss scaling only).
inline constexpr std::string_view kLossScaleInput = "train.loss_scale";
/// Output: the global L2 norm of the (unscaled) gradients, before clipping
/// (when clipping or loss scaling is on).
inline constexpr std::string_view kGradNormOutput = "train.grad_norm";
/// Output: a bool scalar, true when every gradient is finite (loss scaling only).
inline constexpr std::string_view kGradsFiniteOutput = "train.grads_finite";

/// Input (data parallel only): a scalar of the parameters' dtype, this rank's
/// rows / the global batch's rows. A rank's gradients are means over its
/// shard; weighted by it, their sum across the ranks is the global batch's.
inline constexpr std::string_view kShardWeightInput = "train.shard_weight";

/// Parameter of the program holding optimizer state `slot` of parameter `param`.
std::string stateName(std::string_view slot, std::string_view param);
/// Output: `param`'s update packed as [1 + slots, ...] (see packParamUpdate).
std::string updateOutputName(std::string_view param);
/// Gradient program: the parameter holding the gradient sum so far and the
/// output holding it with this micro-batch's gradient added; the update
/// program's parameter holding the sum.
std::string gradientSumName(std::string_view param);

/// The graphs of one training setup.
struct TrainingProgram {
  /// accumulationSteps == 1: forward, backward and update in one graph.
  /// Inputs: the model's inputs, the optimizer scalars (Optimizer.h) and, with
  /// loss scaling, kLossScaleInput. Parameters: the model's, and each
  /// trainable parameter's state. Outputs: the model's, updateOutputName(p)
  /// per trainable p, and the grad-norm and finite outputs when computed. With
  /// loss scaling, a step whose gradients are not all finite outputs the old
  /// parameter and state values.
  std::unique_ptr<ir::Graph> step;
  /// accumulationSteps > 1: forward and backward of one micro-batch, adding
  /// each (unscaled) gradient to gradientSumName(p), a parameter and an output.
  std::unique_ptr<ir::Graph> gradient;
  /// accumulationSteps > 1: the update from the summed gradients (parameters
  /// gradientSumName(p)), divided by k; the other parameters are the trainable
  /// ones and their state; outputs as `step`'s, without the model's.
  std::unique_ptr<ir::Graph> update;

  std::vector<std::string> trainable; ///< in the model's creation order
  std::vector<std::string> frozen;
  std::vector<std::string> stateSlots; ///< optimizerStateSlots(options.optimizer)
  /// The dtype of the trainable parameters, state and optimizer scalars.
  DType paramDType = DType::F32;
  bool lossScaling = false;
  bool computesGradNorm = false;
  /// Data parallel (options.dataParallel()): the gradients are all-reduced
  /// before the finite check, clipping and the update, in `step` or (with
  /// accumulation) in `update`, which then read kShardWeightInput.
  bool dataParallel = false;
  /// The all_reduce buckets, each a list of trainable parameters, in the
  /// order they are reduced (the backward pass's order of production).
  std::vector<std::vector<std::string>> gradientBuckets;
};

/// Builds the training program of `model`, which must have a scalar float
/// output named options.lossOutput and at least one trainable parameter.
/// `model` is left unchanged. Without options.dataParallel() the program has
/// no all_reduce and does not depend on the communicator at all.
Expected<TrainingProgram> buildTrainingProgram(const Graph &model,
                                               const TrainingOptions &options);

} // namespace kiln::training
