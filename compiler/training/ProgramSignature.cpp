// The training program's signature: its printed graphs (or their batch-free
// structure) and the options that are constants of the program or drive the
// host's side of each step.
#include "compiler/training/ProgramSignature.h"

#include "ir/graph/Printer.h"
#include "runtime/cache/ContentHash.h"
#include "support/Error.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
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

/// A constant's value as the shards can agree on it: the value itself, or
/// "-1/(B*m)" when it is -1/(rows * m) for one of the shards' rows (the
/// smallest that fits) and a whole m. Every rank tries the same rows in the
/// same order, so a value is written the same way on every rank; the price is
/// that a constant equal to such a scale on every rank by chance is not told
/// from it.
std::string batchFreeValue(double value, std::span<const int64_t> rows) {
  if (value != 0.0 && std::isfinite(value))
    for (int64_t r : rows) {
      double m = 1.0 / (std::abs(value) * static_cast<double>(r));
      double whole = std::round(m);
      // Past 2^53 a double holds no fraction, so "whole" would mean nothing.
      if (whole >= 1.0 && whole <= 0x1p53 && std::abs(m - whole) <= 1e-9 * whole)
        return fmt::format("{}1/(B*{})", value < 0 ? "-" : "", static_cast<int64_t>(whole));
    }
  return fmt::format("{}", value);
}

std::string batchFreeAttr(const ir::Attr &attr, std::span<const int64_t> rows) {
  switch (ir::attrKind(attr)) {
  case ir::AttrKind::Ints: return fmt::format("<{} ints>", std::get<std::vector<int64_t>>(attr).size());
  case ir::AttrKind::Floats: {
    std::vector<std::string> values;
    for (double value : std::get<std::vector<double>>(attr))
      values.push_back(batchFreeValue(value, rows));
    return fmt::format("[{}]", fmt::join(values, ", "));
  }
  default: return ir::attrStr(attr);
  }
}

/// The graph's structure: the numbers a shard's row count decides left out.
std::string batchFreeText(const ir::Graph &graph, std::span<const int64_t> rows) {
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
      attrs.push_back(fmt::format("{}={}", key, batchFreeAttr(attr, rows)));
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
                                     const TrainingOptions &options,
                                     std::span<const int64_t> shardRows) {
  KILN_CHECK(!shardRows.empty(), "a program signature needs every rank's rows");
  bool even = std::ranges::all_of(shardRows, [&](int64_t r) { return r == shardRows.front(); });
  // The shards' distinct rows, ascending: the order batchFreeValue tries them in.
  std::vector<int64_t> rows(shardRows.begin(), shardRows.end());
  std::ranges::sort(rows);
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  std::string text = optionsText(options);
  for (const ir::Graph *graph : {program.step.get(), program.gradient.get(), program.update.get()})
    if (graph)
      text += even ? ir::printGraph(*graph) : batchFreeText(*graph, rows);
  return text;
}

uint64_t trainingProgramHash(const TrainingProgram &program, const TrainingOptions &options,
                             std::span<const int64_t> shardRows) {
  return runtime::hashBytes(trainingProgramSignature(program, options, shardRows)).low;
}

} // namespace kiln::training
