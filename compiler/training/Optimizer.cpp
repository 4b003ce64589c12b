// SGD, Adam and AdamW updates as elementwise graph nodes; their per-step
// scalars computed on the host.
#include "compiler/training/Optimizer.h"

#include "compiler/training/IrBuilder.h"

#include <cmath>
#include <fmt/format.h>

namespace kiln::training {

using ir::OpKind;
using ir::Value;

std::string_view optimizerKindName(OptimizerKind kind) {
  switch (kind) {
  case OptimizerKind::Sgd:
    return "sgd";
  case OptimizerKind::Adam:
    return "adam";
  case OptimizerKind::AdamW:
    return "adamw";
  }
  KILN_UNREACHABLE("unknown optimizer kind");
}

OptimizerOptions OptimizerOptions::sgd(double learningRate, double momentum, bool nesterov,
                                       double weightDecay) {
  OptimizerOptions options;
  options.kind = OptimizerKind::Sgd;
  options.learningRate = learningRate;
  options.momentum = momentum;
  options.nesterov = nesterov;
  options.weightDecay = weightDecay;
  return options;
}

OptimizerOptions OptimizerOptions::adam(double learningRate, double beta1, double beta2,
                                        double epsilon, double weightDecay) {
  OptimizerOptions options;
  options.kind = OptimizerKind::Adam;
  options.learningRate = learningRate;
  options.beta1 = beta1;
  options.beta2 = beta2;
  options.epsilon = epsilon;
  options.weightDecay = weightDecay;
  return options;
}

OptimizerOptions OptimizerOptions::adamW(double learningRate, double weightDecay, double beta1,
                                         double beta2, double epsilon) {
  OptimizerOptions options = adam(learningRate, beta1, beta2, epsilon, weightDecay);
  options.kind = OptimizerKind::AdamW;
  return options;
}

Expected<void> validateOptimizer(const OptimizerOptions &options) {
  std::string_view name = optimizerKindName(options.kind);
  auto bad = [&](std::string message) {
    return makeError(ErrorCode::InvalidArgument, fmt::format("optimizer {}: {}", name, message));
  };
  if (!(std::isfinite(options.learningRate) && options.learningRate >= 0))
    return bad(fmt::format("learning rate must be finite and >= 0, got {}", options.learningRate));
  if (!(options.weightDecay >= 0 && std::isfinite(options.weightDecay)))
    return bad(fmt::format("weight decay must be finite and >= 0, got {}", options.weightDecay));
  if (options.kind == OptimizerKind::Sgd) {
    if (!(options.momentum >= 0 && options.momentum < 1))
      return bad(fmt::format("momentum must be in [0, 1), got {}", options.momentum));
    if (options.nesterov && options.momentum == 0)
      return bad("nesterov needs a momentum > 0");
    return {};
  }
  if (!(options.beta1 >= 0 && options.beta1 < 1) || !(options.beta2 >= 0 && options.beta2 < 1))
    return bad(fmt::format("beta1 and beta2 must be in [0, 1), got {} and {}", options.beta1,
                           options.beta2));
  if (!(options.epsilon > 0 && std::isfinite(options.epsilon)))
    return bad(fmt::format("epsilon must be finite and > 0, got {}", options.epsilon));
  return {};
}

std::vector<std::string> optimizerStateSlots(const OptimizerOptions &options) {
  if (options.kind == OptimizerKind::Sgd)
    return options.momentum != 0 ? std::vector<std::string>{"momentum"}
                                 : std::vector<std::string>{};
  return {"m", "v"};
}

Expected<OptimizerScalars> addOptimizerScalars(ir::Graph &graph, const OptimizerOptions &options,
                                               DType dtype) {
  OptimizerScalars scalars;
  ir::TensorType scalarType{dtype, {}};
  KILN_TRY(scalars.learningRate, graph.addInput(std::string(kLearningRateInput), scalarType));
  if (options.kind != OptimizerKind::Sgd) {
    KILN_TRY(scalars.biasCorrection1,
             graph.addInput(std::string(kBiasCorrection1Input), scalarType));
    KILN_TRY(scalars.biasCorrection2,
             graph.addInput(std::string(kBiasCorrection2Input), scalarType));
  }
  return scalars;
}

NamedTensors optimizerScalarValues(const OptimizerOptions &options, double learningRate,
                                   int64_t step, DType dtype) {
  auto scalar = [&](double value) {
    return HostTensor::fromDoubles(dtype, {}, std::span<const double>(&value, 1));
  };
  NamedTensors values;
  values.emplace(kLearningRateInput, scalar(learningRate));
  if (options.kind != OptimizerKind::Sgd) {
    double t = static_cast<double>(step);
    values.emplace(kBiasCorrection1Input, scalar(1.0 - std::pow(options.beta1, t)));
    values.emplace(kBiasCorrection2Input, scalar(1.0 - std::pow(options.beta2, t)));
  }
  return values;
}

namespace {

/// SGD in PyTorch's form (dampening 0): g += wd * p; buf = mu * buf + g;
/// d = nesterov ? g + mu * buf : buf; p -= lr * d. With zero-initialized
/// state the first step's buf is g, as in PyTorch.
Expected<ParamUpdate> buildSgd(IrBuilder &b, const OptimizerOptions &options,
                               const OptimizerScalars &scalars, Value *param, Value *grad,
                               std::span<Value *const> state) {
  ParamUpdate update;
  if (options.weightDecay != 0) {
    KILN_TRY(Value * decay, b.scale(param, options.weightDecay));
    KILN_TRY(grad, b.add(grad, decay));
  }
  Value *direction = grad;
  if (options.momentum != 0) {
    KILN_TRY(Value * kept, b.scale(state[0], options.momentum));
    KILN_TRY(Value * buffer, b.add(kept, grad));
    update.state.push_back(buffer);
    direction = buffer;
    if (options.nesterov) {
      KILN_TRY(Value * ahead, b.scale(buffer, options.momentum));
      KILN_TRY(direction, b.add(grad, ahead));
    }
  }
  KILN_TRY(Value * step, b.mul(direction, scalars.learningRate));
  KILN_TRY(update.param, b.sub(param, step));
  return update;
}

/// Adam (Kingma & Ba, in PyTorch's arrangement): m = b1 m + (1 - b1) g;
/// v = b2 v + (1 - b2) g^2; p -= lr * (m / bc1) / (sqrt(v / bc2) + eps).
/// Adam adds wd * p to g (L2); AdamW multiplies p by 1 - lr * wd first.
Expected<ParamUpdate> buildAdam(IrBuilder &b, const OptimizerOptions &options,
                                const OptimizerScalars &scalars, Value *param, Value *grad,
                                std::span<Value *const> state) {
  bool decoupled = options.kind == OptimizerKind::AdamW;
  if (!decoupled && options.weightDecay != 0) {
    KILN_TRY(Value * decay, b.scale(param, options.weightDecay));
    KILN_TRY(grad, b.add(grad, decay));
  }
  ParamUpdate update;
  KILN_TRY(Value * keptM, b.scale(state[0], options.beta1));
  KILN_TRY(Value * newM, b.scale(grad, 1.0 - options.beta1));
  KILN_TRY(Value * m, b.add(keptM, newM));
  KILN_TRY(Value * square, b.mul(grad, grad));
  KILN_TRY(Value * keptV, b.scale(state[1], options.beta2));
  KILN_TRY(Value * newV, b.scale(square, 1.0 - options.beta2));
  KILN_TRY(Value * v, b.add(keptV, newV));
  update.state = {m, v};

  DType dtype = param->type().dtype;
  KILN_TRY(Value * mHat, b.div(m, scalars.biasCorrection1));
  KILN_TRY(Value * vHat, b.div(v, scalars.biasCorrection2));
  KILN_TRY(Value * root, b.op(OpKind::Sqrt, {vHat}));
  KILN_TRY(Value * epsilon, b.scalar(options.epsilon, dtype));
  KILN_TRY(Value * denominator, b.add(root, epsilon));
  KILN_TRY(Value * ratio, b.div(mHat, denominator));
  KILN_TRY(Value * step, b.mul(ratio, scalars.learningRate));
  Value *base = param;
  if (decoupled && options.weightDecay != 0) {
    KILN_TRY(Value * one, b.scalar(1.0, dtype));
    KILN_TRY(Value * decayRate, b.scale(scalars.learningRate, options.weightDecay));
    KILN_TRY(Value * keep, b.sub(one, decayRate));
    KILN_TRY(base, b.mul(param, keep));
  }
  KILN_TRY(update.param, b.sub(base, step));
  return update;
}

} // namespace

Expected<ParamUpdate> buildParamUpdate(ir::Graph &graph, const OptimizerOptions &options,
                                       const OptimizerScalars &scalars, Value *param,
                                       Value *grad, std::span<Value *const> state) {
  KILN_TRY_VOID(validateOptimizer(options));
  const ir::TensorType &type = param->type();
  if (type.dtype != DType::F32 && type.dtype != DType::F64)
    return makeError(ErrorCode::Unsupported,
                     fmt::format("parameter '{}' is {}: trainable parameters (the master "
                                 "weights) must be f32 or f64; train in bf16 or f16 through a "
                                 "precision policy instead",
                                 param->name(), type.str()));
  KILN_CHECK(grad->type() == type, "a gradient has its parameter's type");
  KILN_CHECK(state.size() == optimizerStateSlots(options).size(), "one state value per slot");
  for (Value *slot : state)
    KILN_CHECK(slot->type() == type, "optimizer state has its parameter's type");
  KILN_CHECK(scalars.learningRate && scalars.learningRate->type().dtype == type.dtype,
             "the learning rate input has the parameters' dtype");

  IrBuilder b(graph);
  if (options.kind == OptimizerKind::Sgd)
    return buildSgd(b, options, scalars, param, grad, state);
  KILN_CHECK(scalars.biasCorrection1 && scalars.biasCorrection2, "Adam's scalars were added");
  return buildAdam(b, options, scalars, param, grad, state);
}

Expected<Value *> packParamUpdate(ir::Graph &graph, const ParamUpdate &update) {
  IrBuilder b(graph);
  std::vector<Value *> parts;
  parts.push_back(update.param);
  parts.insert(parts.end(), update.state.begin(), update.state.end());
  for (Value *&part : parts) {
    KILN_TRY(Value * leading, b.op(OpKind::Unsqueeze, {part}, {{"axes", std::vector<int64_t>{0}}}));
    part = leading;
  }
  return b.op(OpKind::Concat, std::move(parts), {{"axis", int64_t{0}}});
}

} // namespace kiln::training
