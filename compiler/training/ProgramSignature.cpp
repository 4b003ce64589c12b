// The training program's signature: its printed graphs (or their batch-free
// structure) and the options that are constants of the program or drive the
// host's side of each step.
#include "compiler/training/ProgramSignature.h"

#include "ir/graph/Printer.h"
#include "runtime/cache/ContentHash.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <unordered_map>

namespace kiln::training {

namespace {

std::string optionsText(const TrainingOptions &options) {
  const OptimizerOptions &o = options.optimizer;
  const LossScaleOptions &scale = options.lossScale;
  std::string text = fmt::format(
      "optimizer {} lr {} momentum {} nesterov {} beta1 {} beta2 {} epsilon {} decay {}\n",
      optimizerKindName(o.kind), o.learningRate, o.momentum, o.nesterov, o.beta1, o.beta2,
      o.epsilon, o.weightDecay);
  text += fmt::format("loss {} accumulate {} clip {} precision {} buckets {} {}\n",
                      options.lossOutput, options.accumulationSteps,
                      options.clipGlobalNorm ? fmt::format("{}", *options.clipGlobalNorm) : "none",
                      passes::precisionPolicyName(options.compile.precision),
                      options.firstBucketBytes, options.bucketBytes);
  if (options.lossScaling())
    text += fmt::format("loss scale {} growth {} backoff {} interval {}\n", scale.initialScale,
                        scale.growthFactor, scale.backoffFactor, scale.growthInterval);
  return text;
}

/// The type with its shape reduced to its rank, or with only the first
/// dimension (a batch input's rows) replaced.
std::string rankOnly(const ir::TensorType &type) {
  return fmt::format("{} rank {}", dtypeName(type.dtype), type.rank());
}
std::string withoutRows(const ir::TensorType &type) {
  if (type.rank() == 0)
    return type.str();
  ir::Shape rest(type.shape.begin() + 1, type.shape.end());
  return fmt::format("{}[B{}{}]", dtypeName(type.dtype), rest.empty() ? "" : ", ",
                     fmt::join(rest, ", "));
}

std::string batchFreeAttr(const ir::Attr &attr) {
  switch (ir::attrKind(attr)) {
  case ir::AttrKind::Ints: return fmt::format("<{} ints>", std::get<std::vector<int64_t>>(attr).size());
  case ir::AttrKind::Floats: return "<floats>";
  default: return ir::attrStr(attr);
  }
}

/// The graph's structure: the numbers a shard's row count decides left out.
std::string batchFreeText(const ir::Graph &graph) {
  std::unordered_map<const ir::Value *, size_t> number;
  std::string text = fmt::format("graph {}\n", graph.name());
  auto name = [&](const ir::Value *value) {
    auto [it, added] = number.emplace(value, number.size());
    return fmt::format("%{}", it->second);
  };
  for (const ir::Value *input : graph.inputs()) {
    bool modelInput = !input->name().starts_with(kReservedPrefix);
    text += fmt::format("input {} {} = {}\n", input->name(),
                        modelInput ? withoutRows(input->type()) : input->type().str(),
                        name(input));
  }
  for (const ir::Value *param : graph.params())
    text += fmt::format("param {} {} = {}\n", param->name(), param->type().str(), name(param));
  for (const ir::Node *node : graph.topologicalOrder()) {
    std::vector<std::string> operands, attrs;
    for (const ir::Value *operand : node->operands())
      operands.push_back(name(operand));
    for (const auto &[key, attr] : node->attrs())
      attrs.push_back(fmt::format("{}={}", key, batchFreeAttr(attr)));
    bool exact = node->kind() == ir::OpKind::AllReduce;
    text += fmt::format("{} = {}({}) {{{}}} : {}\n", name(node->result()), node->name(),
                        fmt::join(operands, ", "), fmt::join(attrs, ", "),
                        exact ? node->type().str() : rankOnly(node->type()));
  }
  for (const ir::GraphOutput &output : graph.outputs())
    text += fmt::format("output {} = {}\n", output.name, name(output.value));
  return text;
}

} // namespace

std::string trainingProgramSignature(const TrainingProgram &program,
                                     const TrainingOptions &options, BatchDimension batch) {
  std::string text = optionsText(options);
  for (const ir::Graph *graph : {program.step.get(), program.gradient.get(), program.update.get()})
    if (graph)
      text += batch == BatchDimension::Exact ? ir::printGraph(*graph) : batchFreeText(*graph);
  return text;
}

uint64_t trainingProgramHash(const TrainingProgram &program, const TrainingOptions &options,
                             BatchDimension batch) {
  return runtime::hashBytes(trainingProgramSignature(program, options, batch)).low;
}

} // namespace kiln::training
