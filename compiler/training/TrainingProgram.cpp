// Builds the training graphs: clone the model, append its gradients, remove
// the loss scale, check finiteness, clip, and add the optimizer updates.
#include "compiler/training/TrainingProgram.h"

#include "compiler/training/GradientAllReduce.h"
#include "compiler/training/IrBuilder.h"
#include "ir/graph/Clone.h"
#include "passes/graph/Autodiff.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <limits>
#include <numeric>

namespace kiln::training {

using ir::OpKind;
using ir::Value;

std::string stateName(std::string_view slot, std::string_view param) {
  return fmt::format("train.{}.{}", slot, param);
}
std::string updateOutputName(std::string_view param) {
  return fmt::format("train.update.{}", param);
}
std::string gradientSumName(std::string_view param) {
  return fmt::format("train.grad_sum.{}", param);
}

namespace {

Error trainingError(ErrorCode code, std::string message) {
  return Error(code, "training: " + std::move(message));
}

bool reserved(std::string_view name) { return name.starts_with(kReservedPrefix); }

/// The model's names must leave the "train." namespace to the program.
Expected<void> checkNoReservedNames(const ir::Graph &graph) {
  auto check = [](std::string_view what, std::string_view name) -> Expected<void> {
    if (reserved(name))
      return std::unexpected(trainingError(
          ErrorCode::InvalidArgument,
          fmt::format("the model's {} '{}' uses the reserved prefix '{}'", what, name,
                      kReservedPrefix)));
    return {};
  };
  for (const Value *input : graph.inputs())
    KILN_TRY_VOID(check("input", input->name()));
  for (const Value *param : graph.params())
    KILN_TRY_VOID(check("parameter", param->name()));
  for (const ir::GraphOutput &output : graph.outputs())
    KILN_TRY_VOID(check("output", output.name));
  return {};
}

/// The loss output's value: present, float, one element.
Expected<Value *> findLoss(const ir::Graph &graph, const std::string &name) {
  std::vector<std::string> names;
  for (const ir::GraphOutput &output : graph.outputs()) {
    if (output.name != name) {
      names.push_back(output.name);
      continue;
    }
    const ir::TensorType &type = output.value->type();
    if (!isFloatingPoint(type.dtype) || type.numElements() != 1)
      return std::unexpected(trainingError(
          ErrorCode::ShapeMismatch,
          fmt::format("the loss output '{}' must be a float scalar, got {}; reduce it to one "
                      "value (nn::softmaxCrossEntropy returns the batch mean)",
                      name, type.str())));
    return output.value;
  }
  return std::unexpected(trainingError(
      ErrorCode::NotFound,
      fmt::format("the model has no output named '{}' (its outputs: {}); name the loss output "
                  "with TrainingOptions::lossOutput",
                  name, fmt::join(names, ", "))));
}

/// The IR parameters to train, in the model's order, all of one f32 or f64 dtype.
Expected<std::vector<Value *>> trainableParams(const ir::Graph &graph,
                                               const std::vector<std::string> &names,
                                               DType &dtype) {
  if (names.empty())
    return std::unexpected(trainingError(
        ErrorCode::InvalidArgument, "the model has no trainable parameter (all are frozen)"));
  std::vector<Value *> params;
  for (const std::string &name : names) {
    Value *param = graph.findParam(name);
    KILN_CHECK(param, "a kiln::Graph parameter is an IR parameter");
    DType type = param->type().dtype;
    if (type != DType::F32 && type != DType::F64)
      return std::unexpected(trainingError(
          ErrorCode::Unsupported,
          fmt::format("trainable parameter '{}' is {}: master weights must be f32 or f64 (train "
                      "in bf16 or f16 through TrainingOptions::compile.precision)",
                      name, param->type().str())));
    if (!params.empty() && type != dtype)
      return std::unexpected(trainingError(
          ErrorCode::TypeMismatch,
          fmt::format("trainable parameters mix dtypes: '{}' is {} but '{}' is {}", names[0],
                      dtypeName(dtype), name, dtypeName(type))));
    dtype = type;
    params.push_back(param);
  }
  return params;
}

/// The gradients of the trainable parameters and the order the backward pass
/// produces them in.
struct Gradients {
  std::vector<Value *> values; ///< in the parameters' order
  /// Indices into `values`, first produced first (the order of their nodes,
  /// which is the backward pass's: autodiff appends it from the loss back).
  std::vector<size_t> productionOrder;
};

/// The gradients of `loss` for `params`, without the loss scale: with loss
/// scaling the backward pass is seeded with the kLossScaleInput and each
/// gradient divided by it again (exact for the power-of-two scales the host
/// keeps, unless a gradient overflowed: that is what the finite check sees).
Expected<Gradients> unscaledGradients(ir::Graph &graph, Value *loss,
                                      const std::vector<Value *> &params, bool lossScaling) {
  Value *seed = nullptr;
  if (lossScaling) {
    KILN_TRY(seed, graph.addInput(std::string(kLossScaleInput), loss->type()));
  }
  Gradients grads;
  KILN_TRY(grads.values, passes::appendGradients(graph, loss, params, seed));
  KILN_CHECK(grads.values.size() == params.size(), "one gradient per parameter");
  auto position = [&](size_t i) -> int64_t {
    const ir::Node *node = grads.values[i]->definingNode();
    return node ? static_cast<int64_t>(node->id()) : -1; // a parameter or input: at once
  };
  grads.productionOrder.resize(params.size());
  std::iota(grads.productionOrder.begin(), grads.productionOrder.end(), size_t{0});
  std::stable_sort(grads.productionOrder.begin(), grads.productionOrder.end(),
                   [&](size_t a, size_t b) { return position(a) < position(b); });
  if (!lossScaling)
    return grads;
  IrBuilder b(graph);
  KILN_TRY(Value * scale, b.op(OpKind::Reshape, {seed}, {{"shape", ir::Shape{}}}));
  for (Value *&grad : grads.values) {
    KILN_TRY(Value * typedScale, b.castTo(scale, grad->type().dtype));
    KILN_TRY(Value * unscaled, b.div(grad, typedScale));
    grad = unscaled;
  }
  return grads;
}

/// Data parallel: the gradients summed across the ranks, each weighted by the
/// kShardWeightInput, before anything reads them (the finite check, the norm
/// and clipping, the update), so every rank sees the global batch's gradients.
Expected<std::vector<Value *>> reduceAcrossRanks(ir::Graph &graph, const TrainingOptions &options,
                                                 TrainingProgram &program,
                                                 const std::vector<Value *> &grads,
                                                 const std::vector<size_t> &productionOrder) {
  KILN_TRY(Value * weight,
           graph.addInput(std::string(kShardWeightInput), ir::TensorType{program.paramDType, {}}));
  std::vector<std::vector<size_t>> buckets;
  KILN_TRY(std::vector<Value *> reduced,
           appendGradientAllReduce(graph, grads, productionOrder, weight,
                                   options.firstBucketBytes, options.bucketBytes, buckets));
  for (const std::vector<size_t> &bucket : buckets) {
    std::vector<std::string> names;
    for (size_t index : bucket)
      names.push_back(program.trainable[index]);
    program.gradientBuckets.push_back(std::move(names));
  }
  return reduced;
}

/// After the (unscaled) gradients: the global norm and the finite flag as
/// outputs, clipping, the optimizer state parameters and the packed updates.
Expected<void> appendUpdates(ir::Graph &graph, const TrainingOptions &options,
                             TrainingProgram &program, const std::vector<Value *> &params,
                             std::vector<Value *> grads) {
  IrBuilder b(graph);
  DType dtype = program.paramDType;
  Value *finite = nullptr; // loss scaling: every gradient finite
  if (program.computesGradNorm) {
    // One sum of squares per parameter and a scalar total: an inf or NaN in
    // any gradient makes the total inf or NaN.
    Value *total = nullptr;
    for (Value *grad : grads) {
      KILN_TRY(Value * squares, b.mul(grad, grad));
      KILN_TRY(Value * sum, b.sumAll(squares));
      if (total) {
        KILN_TRY(total, b.add(total, sum));
      } else {
        total = sum;
      }
    }
    KILN_TRY(Value * norm, b.op(OpKind::Sqrt, {total}));
    KILN_TRY_VOID(graph.addOutput(std::string(kGradNormOutput), norm));
    if (program.lossScaling) {
      double largest = dtype == DType::F64 ? std::numeric_limits<double>::max()
                                           : std::numeric_limits<float>::max();
      KILN_TRY(Value * magnitude, b.op(OpKind::Abs, {total}));
      KILN_TRY(Value * limit, b.scalar(largest, dtype));
      KILN_TRY(finite, b.op(OpKind::Le, {magnitude, limit}));
      KILN_TRY_VOID(graph.addOutput(std::string(kGradsFiniteOutput), finite));
    }
    if (options.clipGlobalNorm) {
      // PyTorch's clip_grad_norm_: factor = min(1, max / (norm + 1e-6)).
      KILN_TRY(Value * tiny, b.scalar(1e-6, dtype));
      KILN_TRY(Value * guarded, b.add(norm, tiny));
      KILN_TRY(Value * maxNorm, b.scalar(*options.clipGlobalNorm, dtype));
      KILN_TRY(Value * ratio, b.div(maxNorm, guarded));
      KILN_TRY(Value * one, b.scalar(1.0, dtype));
      KILN_TRY(Value * factor, b.op(OpKind::Min, {ratio, one}));
      for (Value *&grad : grads) {
        KILN_TRY(Value * clipped, b.mul(grad, factor));
        grad = clipped;
      }
    }
  }

  KILN_TRY(OptimizerScalars scalars, addOptimizerScalars(graph, options.optimizer, dtype));
  for (size_t i = 0; i < params.size(); ++i) {
    std::vector<Value *> state;
    for (const std::string &slot : program.stateSlots) {
      KILN_TRY(Value * value,
               graph.addParam(stateName(slot, params[i]->name()), params[i]->type()));
      state.push_back(value);
    }
    KILN_TRY(ParamUpdate update,
             buildParamUpdate(graph, options.optimizer, scalars, params[i], grads[i], state));
    if (finite) {
      // A step with a gradient that is not finite changes nothing: the
      // program selects the old values itself, so the state can stay where
      // the program runs (on a device) and the host only reads the flag.
      KILN_TRY(update.param, b.op(OpKind::Where, {finite, update.param, params[i]}));
      for (size_t slot = 0; slot < state.size(); ++slot) {
        KILN_TRY(update.state[slot],
                 b.op(OpKind::Where, {finite, update.state[slot], state[slot]}));
      }
    }
    KILN_TRY(Value * packed, packParamUpdate(graph, update));
    KILN_TRY_VOID(graph.addOutput(updateOutputName(params[i]->name()), packed));
  }
  return {};
}

/// The model's clone with its loss found and its trainable parameters listed.
struct ModelCopy {
  std::unique_ptr<ir::Graph> graph;
  Value *loss = nullptr;
  std::vector<Value *> params;
};

Expected<ModelCopy> copyModel(const Graph &model, const TrainingOptions &options,
                              TrainingProgram &program) {
  ModelCopy copy;
  KILN_TRY(copy.graph, ir::cloneGraph(model.ir()));
  KILN_TRY(copy.loss, findLoss(*copy.graph, options.lossOutput));
  KILN_TRY(copy.params, trainableParams(*copy.graph, program.trainable, program.paramDType));
  return copy;
}

} // namespace

Expected<TrainingProgram> buildTrainingProgram(const Graph &model,
                                               const TrainingOptions &options) {
  KILN_TRY_VOID(model.finalize());
  KILN_TRY_VOID(validateTrainingOptions(options));
  KILN_TRY_VOID(checkNoReservedNames(model.ir()));

  TrainingProgram program;
  program.trainable = model.trainableParamNames();
  program.frozen = model.frozenParamNames();
  program.stateSlots = optimizerStateSlots(options.optimizer);
  program.lossScaling = options.lossScaling();
  program.computesGradNorm = program.lossScaling || options.clipGlobalNorm.has_value();
  program.dataParallel = options.dataParallel();

  KILN_TRY(ModelCopy copy, copyModel(model, options, program));
  KILN_TRY(Gradients gradients,
           unscaledGradients(*copy.graph, copy.loss, copy.params, program.lossScaling));
  std::vector<Value *> grads = std::move(gradients.values);

  if (options.accumulationSteps == 1) {
    if (program.dataParallel) {
      KILN_TRY(grads, reduceAcrossRanks(*copy.graph, options, program, grads,
                                        gradients.productionOrder));
    }
    KILN_TRY_VOID(appendUpdates(*copy.graph, options, program, copy.params, std::move(grads)));
    program.step = std::move(copy.graph);
    return program;
  }

  // Gradient program: this micro-batch's gradients added to the running sums
  // (parameters the trainer keeps bound, updated from the outputs of the same
  // name after each run).
  IrBuilder b(*copy.graph);
  for (size_t i = 0; i < grads.size(); ++i) {
    std::string name = gradientSumName(copy.params[i]->name());
    KILN_TRY(Value * sum, copy.graph->addParam(name, copy.params[i]->type()));
    KILN_TRY(Value * added, b.add(sum, grads[i]));
    KILN_TRY_VOID(copy.graph->addOutput(name, added));
  }
  program.gradient = std::move(copy.graph);

  // Update program: the mean gradient sum / k, summed across the ranks once
  // per step (data parallel, in the gradient program's order of production),
  // then the common tail.
  auto update = std::make_unique<ir::Graph>("train_update");
  IrBuilder u(*update);
  std::vector<Value *> params, means;
  for (const std::string &name : program.trainable) {
    const ir::TensorType &type = model.ir().findParam(name)->type();
    KILN_TRY(Value * param, update->addParam(name, type));
    KILN_TRY(Value * sum, update->addParam(gradientSumName(name), type));
    KILN_TRY(Value * mean, u.scale(sum, 1.0 / static_cast<double>(options.accumulationSteps)));
    params.push_back(param);
    means.push_back(mean);
  }
  if (program.dataParallel) {
    KILN_TRY(means, reduceAcrossRanks(*update, options, program, means,
                                      gradients.productionOrder));
  }
  KILN_TRY_VOID(appendUpdates(*update, options, program, params, std::move(means)));
  program.update = std::move(update);
  return program;
}

} // namespace kiln::training
