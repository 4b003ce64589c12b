// Optimizers as graph IR: SGD (momentum, Nesterov, weight decay), Adam and
// AdamW. Each builds the update of one parameter from (param, gradient, state,
// per-step scalars) as elementwise nodes, so fusion turns it into one kernel.
//
// They live in compiler/training rather than in the DSL because they act on
// the training program's IR after autodiff (passes/graph/Autodiff.h), which is
// an ir::Graph, not a kiln::Graph the user is building.
#pragma once

#include "ir/graph/Graph.h"
#include "support/Error.h"
#include "support/HostTensor.h"

#include <span>
#include <string>
#include <vector>

namespace kiln::training {

enum class OptimizerKind { Sgd, Adam, AdamW };

/// "sgd", "adam", "adamw".
std::string_view optimizerKindName(OptimizerKind kind);

/// An optimizer and its hyper-parameters. The learning rate (and Adam's bias
/// corrections) reach the program as scalar inputs each step, so a schedule
/// never recompiles; the others are constants of the program.
struct OptimizerOptions {
  OptimizerKind kind = OptimizerKind::Sgd;
  /// The learning rate of the first step (Trainer::setLearningRate changes it).
  double learningRate = 0.01;
  /// Sgd: the momentum factor mu (0: plain SGD, no state).
  double momentum = 0.0;
  /// Sgd: Nesterov momentum, d = g + mu * buf instead of d = buf.
  bool nesterov = false;
  /// Adam and AdamW: decay rates of the first and second moment estimates.
  double beta1 = 0.9;
  double beta2 = 0.999;
  /// Adam and AdamW: added to sqrt(v_hat) in the denominator.
  double epsilon = 1e-8;
  /// Sgd and Adam: L2 regularization, wd * param added to the gradient.
  /// AdamW: decoupled decay, param *= 1 - lr * wd before the Adam step.
  double weightDecay = 0.0;

  static OptimizerOptions sgd(double learningRate, double momentum = 0.0, bool nesterov = false,
                              double weightDecay = 0.0);
  static OptimizerOptions adam(double learningRate, double beta1 = 0.9, double beta2 = 0.999,
                               double epsilon = 1e-8, double weightDecay = 0.0);
  static OptimizerOptions adamW(double learningRate, double weightDecay = 0.01,
                                double beta1 = 0.9, double beta2 = 0.999, double epsilon = 1e-8);
};

/// Checks the ranges (learning rate >= 0 and finite, momentum and betas in
/// [0, 1), epsilon > 0, weight decay >= 0, Nesterov only with momentum).
Expected<void> validateOptimizer(const OptimizerOptions &options);

/// The names of the per-parameter state tensors, in order: {} for plain SGD,
/// {"momentum"} with momentum, {"m", "v"} for Adam and AdamW. Each has the
/// parameter's shape and dtype and starts at zero.
std::vector<std::string> optimizerStateSlots(const OptimizerOptions &options);

/// Names of the scalar graph inputs the updates read.
inline constexpr std::string_view kLearningRateInput = "train.learning_rate";
/// 1 - beta1^t and 1 - beta2^t for step t (1-based), computed on the host.
inline constexpr std::string_view kBiasCorrection1Input = "train.bias_correction1";
inline constexpr std::string_view kBiasCorrection2Input = "train.bias_correction2";

/// The per-step scalar inputs, once per program (shared by every parameter).
struct OptimizerScalars {
  ir::Value *learningRate = nullptr;
  ir::Value *biasCorrection1 = nullptr; ///< Adam and AdamW only
  ir::Value *biasCorrection2 = nullptr; ///< Adam and AdamW only
};

/// Adds the scalar inputs `options` needs, of dtype `dtype` (the parameters').
Expected<OptimizerScalars> addOptimizerScalars(ir::Graph &graph, const OptimizerOptions &options,
                                               DType dtype);

/// Their values for update number `step` (1-based) at `learningRate`, by input
/// name, as tensors of `dtype`. Bias corrections are computed in fp64 and
/// rounded once.
NamedTensors optimizerScalarValues(const OptimizerOptions &options, double learningRate,
                                   int64_t step, DType dtype);

/// One parameter's update: its new value and new state, in slot order.
struct ParamUpdate {
  ir::Value *param = nullptr;
  std::vector<ir::Value *> state;
};

/// Builds the update of `param` (f32 or f64) from `grad` (same type) and its
/// `state` (optimizerStateSlots order, same type). Elementwise nodes only.
Expected<ParamUpdate> buildParamUpdate(ir::Graph &graph, const OptimizerOptions &options,
                                       const OptimizerScalars &scalars, ir::Value *param,
                                       ir::Value *grad, std::span<ir::Value *const> state);

/// The update packed as one tensor [1 + slots, ...param shape]: the new
/// parameter, then each new state slot. Fusion gives every group one output,
/// so packing the results of one parameter lets its whole update (parameter
/// and state) be one kernel; the host unpacks it with plain copies.
Expected<ir::Value *> packParamUpdate(ir::Graph &graph, const ParamUpdate &update);

} // namespace kiln::training
