// Launch plan construction: buffers, storage, lifetimes and the arena.
#include "compiler/LaunchPlanBuilder.h"

#include "compiler/CollectiveLaunchOrder.h"
#include "compiler/KernelCost.h"
#include "ir/graph/OpTable.h"
#include "ir/graph/Specialize.h"
#include "ir/kernel/Printer.h"
#include "passes/graph/ArenaPlanner.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <regex>
#include <set>

namespace kiln::compiler {

using passes::FusionGroup;
using passes::GroupKind;
using runtime::LaunchPlan;
using runtime::PlanBuffer;
using runtime::Storage;

Expected<HostTensor> constantTensor(const ir::Node &node) {
  const auto &type = node.type();
  auto created = HostTensor::create(type.dtype, type.shape);
  if (!created)
    return makeError(created.error().code(),
                     fmt::format("constant {}: {}", type.str(), created.error().message()),
                     node.location());
  HostTensor tensor = std::move(*created);
  const std::vector<double> &values = ir::getFloats(node.attrs(), "value");
  int64_t count = tensor.numElements();
  for (int64_t i = 0; i < count; ++i)
    tensor.setDouble(i, values.size() == 1 ? values[0] : values[static_cast<size_t>(i)]);
  return tensor;
}

bool canWriteInPlace(const FusionGroup &group, const ir::Value *input) {
  if (group.kind != GroupKind::Pointwise)
    return false;
  const ir::TensorType &out = group.root->type();
  if (input->type().shape != out.shape ||
      dtypeByteSize(input->type().dtype) != dtypeByteSize(out.dtype))
    return false;
  for (const ir::Node *node : group.nodes) {
    if (node->info().category != ir::OpCategory::Elementwise || node->type().shape != out.shape)
      return false;
  }
  return true;
}

namespace {

/// Derived buffers start at multiples of this, as arena buffers do (ArenaPlanner's default).
constexpr int64_t kDerivedAlignment = 64;

class PlanBuilder {
public:
  PlanBuilder(const ir::Graph &graph, const passes::FusionPlan &fusion, DerivedValues derived)
      : graph_(graph), fusion_(fusion), derivedValues_(derived) {}

  Expected<LaunchPlan> build(const std::vector<std::optional<lower::LoweredKernel>> &kernels,
                             const std::function<runtime::KernelEntry(std::string_view)> &lookup);

private:
  int addBuffer(PlanBuffer buffer) {
    plan_.buffers.push_back(std::move(buffer));
    lifetimes_.push_back({});
    return static_cast<int>(plan_.buffers.size()) - 1;
  }
  int addValueBuffer(const ir::Value *value, std::string name, Storage storage) {
    const auto &type = value->type();
    int id = addBuffer({std::move(name), type.dtype, type.shape,
                        type.numElements() * dtypeByteSize(type.dtype), storage});
    plan_.buffers[id].sizes = type.symbolicDims;
    bufferOf_[value] = id;
    return id;
  }
  /// The buffer of the run's size symbols, made on first use.
  int sizesBuffer() {
    if (plan_.sizesBuffer < 0) {
      auto count = static_cast<int64_t>(plan_.symbols.size());
      plan_.sizesBuffer = addBuffer(
          {"sizes", DType::I64, {count}, count * dtypeByteSize(DType::I64), Storage::Sizes});
    }
    return plan_.sizesBuffer;
  }
  /// The buffer whose bytes an alias chain ends at.
  int storageRoot(int id) const {
    while (plan_.buffers[id].storage == Storage::Alias)
      id = plan_.buffers[id].aliasOf;
    return id;
  }
  void markUse(int id, int step) {
    int root = storageRoot(id);
    lifetimes_[root].last = std::max(lifetimes_[root].last, step);
  }
  /// The parameters a value computed from `inputs` depends on, or nullopt when one of them
  /// is not a parameter, a constant or such a value.
  std::optional<std::set<int>> derivedFrom(const std::vector<const ir::Value *> &inputs) const {
    std::set<int> params;
    for (const ir::Value *input : inputs) {
      auto it = paramsOf_.find(storageRoot(bufferOf_.at(input)));
      if (it == paramsOf_.end())
        return std::nullopt;
      params.insert(it->second.begin(), it->second.end());
    }
    return params;
  }

  /// The step of `lowered`'s prelude, on `launch`'s buffers: it fills a workspace from one
  /// group input alone, so where that input depends on parameters alone the workspace is a
  /// derived value and the prelude a derived step.
  runtime::PlanStep
  preludeStep(const lower::LoweredKernel &lowered, const FusionGroup &group,
              const runtime::PlanStep &launch,
              const std::function<runtime::KernelEntry(std::string_view)> &lookup) {
    const kir::Kernel &kernel = *lowered.prelude;
    KILN_CHECK(kernel.params.size() == launch.args.size() && lowered.preludeInput >= 0 &&
                   static_cast<size_t>(lowered.preludeInput) < group.inputs.size() &&
                   lowered.preludeWorkspace >= 0 &&
                   lowered.preludeWorkspace < lowered.numWorkspaces,
               fmt::format("prelude kernel {} does not match its group's kernel", kernel.name));
    runtime::PlanStep step{kernel.name, lookup(kernel.name), launch.args};
    step.bytesMoved = kernelBytesMoved(kernel);
    KILN_CHECK(static_cast<bool>(step.entry),
               fmt::format("kernel {} was not found in the compiled module", kernel.name));
    int workspace = launch.args[group.inputs.size() + 1 + size_t(lowered.preludeWorkspace)];
    auto params = paramsOf_.find(storageRoot(bufferOf_.at(group.inputs[lowered.preludeInput])));
    if (derivedValues_ == DerivedValues::Kept && params != paramsOf_.end()) {
      plan_.buffers[workspace].storage = Storage::Derived;
      paramsOf_[workspace] = params->second;
      step.derived = true;
      step.derivedFrom.assign(params->second.begin(), params->second.end());
    }
    return step;
  }

  /// A collective is no kernel: a step that calls the run's communicator on
  /// the result, after copying the operand into it.
  void addCollectiveStep(const FusionGroup &group, int step, int result) {
    KILN_CHECK(group.root->kind() == ir::OpKind::AllReduce && group.inputs.size() == 1,
               fmt::format("collective group {} must be one all_reduce of one value", group.id));
    int source = bufferOf_.at(group.inputs[0]);
    markUse(source, step);
    runtime::PlanStep reduce{plan_.buffers[result].name, {}, {source, result}};
    reduce.kind = runtime::StepKind::AllReduce;
    reduce.reduceOp = ir::getString(group.root->attrs(), "op") == "mean" ? runtime::dist::ReduceOp::Mean
                                                                         : runtime::dist::ReduceOp::Sum;
    reduce.bytesMoved = 2 * plan_.buffers[result].bytes;
    plan_.steps.push_back(std::move(reduce));
  }

  /// A packed weight: the buffer it is packed from and the prelude's code (the same code on
  /// the same buffer writes the same workspace).
  using PackKey = std::pair<int, std::string>;
  /// The prelude's body with the weight's parameter named `weight` (GEMMs of one shape take
  /// the weight at different argument positions, `in0` or `in1`, when their epilogues read
  /// different inputs, and pack it the same way), and the workspace's type and size.
  /// Parameter names are identifiers, so the name needs no escaping in the pattern.
  static std::string preludeSignature(const lower::LoweredKernel &lowered) {
    const kir::Kernel &prelude = *lowered.prelude;
    const std::string &weight = prelude.params[size_t(lowered.preludeInput)]->name;
    const kir::Buffer &packed =
        *prelude.params[size_t(lowered.numInputs + 1 + lowered.preludeWorkspace)];
    return fmt::format("{} {}\n{}", dtypeName(packed.dtype), packed.size,
                       std::regex_replace(kir::printStmt(prelude.body),
                                          std::regex("\\b" + weight + "\\b"), "weight"));
  }

  const ir::Graph &graph_;
  const passes::FusionPlan &fusion_;
  DerivedValues derivedValues_;
  /// Each packed weight's workspace, by what it packs.
  std::map<PackKey, int> packedWeights_;
  LaunchPlan plan_;
  std::vector<passes::BufferLifetime> lifetimes_;
  std::map<const ir::Value *, int> bufferOf_;
  /// Buffers whose value depends on parameters and constants only (parameters, constants,
  /// derived buffers), with the parameters it depends on.
  std::map<int, std::set<int>> paramsOf_;
};

Expected<LaunchPlan>
PlanBuilder::build(const std::vector<std::optional<lower::LoweredKernel>> &kernels,
                   const std::function<runtime::KernelEntry(std::string_view)> &lookup) {
  plan_.symbols = graph_.symbols();
  for (const ir::Value *input : graph_.inputs()) {
    int id = addValueBuffer(input, input->name(), Storage::Input);
    plan_.buffers[id].binding = static_cast<int>(plan_.inputs.size());
    plan_.inputs.push_back({input->name(), id});
  }
  for (const ir::Value *param : graph_.params()) {
    int id = addValueBuffer(param, param->name(), Storage::Param);
    plan_.buffers[id].binding = static_cast<int>(plan_.params.size());
    paramsOf_[id] = {plan_.buffers[id].binding};
    plan_.params.push_back({param->name(), id});
  }

  // Values named by an output are written straight into the result tensor
  // (the first name; other names of the same value are copies).
  std::map<const ir::Value *, int> firstOutput;
  for (size_t i = 0; i < graph_.outputs().size(); ++i)
    firstOutput.emplace(graph_.outputs()[i].value, static_cast<int>(i));

  std::vector<std::pair<int, int>> inPlaceCandidates; // (output buffer, input buffer)
  // Collectives as early as their operands allow: the communication thread
  // (or stream) reduces a bucket while the kernels after it run.
  for (size_t g : collectiveLaunchOrder(fusion_)) {
    const FusionGroup &group = fusion_.groups[g];
    const ir::Value *result = group.root->result();
    std::string name = fmt::format("g{}_{}", group.id, group.root->name());
    if (group.kind == GroupKind::Constant) {
      int id = addValueBuffer(result, name, Storage::Constant);
      plan_.buffers[id].binding = static_cast<int>(plan_.constants.size());
      KILN_TRY(HostTensor value, constantTensor(*group.root));
      plan_.constants.push_back(std::move(value));
      paramsOf_[id] = {};
      continue;
    }
    if (group.kind == GroupKind::Alias) {
      KILN_CHECK(group.inputs.size() == 1, "an alias group reads one value");
      int id = addValueBuffer(result, name, Storage::Alias);
      plan_.buffers[id].aliasOf = bufferOf_.at(group.inputs[0]);
      continue;
    }
    int step = static_cast<int>(plan_.steps.size());
    bool collective = group.root->info().category == ir::OpCategory::Collective;
    // A kernel that reads parameters and constants alone computes a derived value (unless
    // it is an output, which every run returns).
    std::optional<std::set<int>> derivedFrom;
    if (derivedValues_ == DerivedValues::Kept && !collective && !firstOutput.contains(result))
      derivedFrom = this->derivedFrom(group.inputs);
    // The result buffer: written straight into the output tensor when it is one.
    auto addResultBuffer = [&] {
      auto output = firstOutput.find(result);
      bool isOutput = output != firstOutput.end();
      int id = addValueBuffer(result, name,
                              isOutput      ? Storage::Output
                              : derivedFrom ? Storage::Derived
                                            : Storage::Arena);
      if (isOutput)
        plan_.buffers[id].binding = output->second;
      lifetimes_[id] = {plan_.buffers[id].bytes, step, step, -1};
      if (derivedFrom)
        paramsOf_[id] = *derivedFrom;
      return id;
    };
    if (collective) {
      addCollectiveStep(group, step, addResultBuffer());
      continue;
    }
    if (!passes::needsKernel(group)) {
      addResultBuffer(); // no elements: nothing to launch
      continue;
    }
    KILN_CHECK(kernels[g].has_value(), fmt::format("group {} has no kernel", group.id));
    const lower::LoweredKernel &lowered = *kernels[g];
    const kir::Kernel &kernel = lowered.kernel;
    runtime::PlanStep launch{kernel.name, lookup(kernel.name), {}};
    KILN_CHECK(static_cast<bool>(launch.entry),
               fmt::format("kernel {} was not found in the compiled module", kernel.name));
    if (derivedFrom) {
      launch.derived = true;
      launch.derivedFrom.assign(derivedFrom->begin(), derivedFrom->end());
    }
    for (const ir::Value *input : group.inputs) {
      int id = bufferOf_.at(input);
      launch.args.push_back(id);
      markUse(id, step);
    }
    int out = addResultBuffer();
    launch.args.push_back(out);
    if (plan_.buffers[out].storage == Storage::Arena)
      for (const ir::Value *input : group.inputs)
        if (canWriteInPlace(group, input))
          inPlaceCandidates.push_back({out, bufferOf_.at(input)});
    // A weight packed the same way for an earlier GEMM (a recurrent weight, once a time
    // step) is packed once: this GEMM reads that workspace and its prelude does not run.
    std::optional<PackKey> packKey;
    int sharedPack = -1;
    if (lowered.prelude) {
      packKey = PackKey{storageRoot(bufferOf_.at(group.inputs[size_t(lowered.preludeInput)])),
                        preludeSignature(lowered)};
      if (auto known = packedWeights_.find(*packKey); known != packedWeights_.end())
        sharedPack = known->second;
    }
    for (int w = 0; w < lowered.numWorkspaces; ++w) {
      if (sharedPack >= 0 && w == lowered.preludeWorkspace) {
        launch.args.push_back(sharedPack);
        continue;
      }
      const kir::BufferPtr &param = kernel.params[lowered.numInputs + 1 + w];
      int id = addBuffer({fmt::format("{}_ws{}", kernel.name, w), param->dtype,
                          {param->size}, param->size * dtypeByteSize(param->dtype),
                          Storage::Arena});
      lifetimes_[id] = {plan_.buffers[id].bytes, step, step, -1};
      launch.args.push_back(id);
    }
    if (lowered.readsSizes)
      launch.args.push_back(sizesBuffer());
    launch.flops = groupFlops(group);
    launch.bytesMoved = kernelBytesMoved(kernel);
    KILN_CHECK(launch.args.size() == kernel.params.size(),
               fmt::format("kernel {} takes {} buffers, the plan passes {}", kernel.name,
                           kernel.params.size(), launch.args.size()));
    // Follow-up kernels take the same buffers one step later each: every argument lives
    // until the last of them (the group's flops are counted once, on its first step).
    std::vector<runtime::PlanStep> followUps;
    for (const kir::Kernel &followUp : lowered.followUps) {
      KILN_CHECK(followUp.params.size() == kernel.params.size(),
                 fmt::format("follow-up kernel {} takes {} buffers, {} takes {}", followUp.name,
                             followUp.params.size(), kernel.name, kernel.params.size()));
      runtime::PlanStep next{followUp.name, lookup(followUp.name), launch.args};
      next.derived = launch.derived;
      next.derivedFrom = launch.derivedFrom;
      KILN_CHECK(static_cast<bool>(next.entry),
                 fmt::format("kernel {} was not found in the compiled module", followUp.name));
      next.bytesMoved = kernelBytesMoved(followUp);
      followUps.push_back(std::move(next));
    }
    std::optional<runtime::PlanStep> prelude;
    if (lowered.prelude && sharedPack < 0) {
      prelude = preludeStep(lowered, group, launch, lookup);
      packedWeights_[*packKey] =
          launch.args[group.inputs.size() + 1 + size_t(lowered.preludeWorkspace)];
    }
    int lastStep = step + (prelude ? 1 : 0) + static_cast<int>(followUps.size());
    for (int id : launch.args)
      markUse(id, lastStep);
    if (prelude)
      plan_.steps.push_back(std::move(*prelude));
    plan_.steps.push_back(std::move(launch));
    for (runtime::PlanStep &next : followUps)
      plan_.steps.push_back(std::move(next));
  }

  // Outputs: bind each name; a buffer read at the end (an alias's root, copied
  // out after the last kernel) lives to the end.
  int end = static_cast<int>(plan_.steps.size());
  for (const ir::GraphOutput &output : graph_.outputs()) {
    int id = bufferOf_.at(output.value);
    plan_.outputs.push_back({output.name, id});
    markUse(id, end);
  }

  // Only arena buffers are planned; an in-place pair must end/begin at one step.
  std::vector<int> arenaIds;
  std::map<int, int> arenaIndex;
  for (size_t id = 0; id < plan_.buffers.size(); ++id)
    if (plan_.buffers[id].storage == Storage::Arena) {
      arenaIndex[static_cast<int>(id)] = static_cast<int>(arenaIds.size());
      arenaIds.push_back(static_cast<int>(id));
    }
  std::vector<passes::BufferLifetime> arenaLifetimes;
  for (int id : arenaIds)
    arenaLifetimes.push_back(lifetimes_[id]);
  for (auto [out, in] : inPlaceCandidates) {
    auto inIt = arenaIndex.find(in);
    if (inIt == arenaIndex.end() || lifetimes_[in].last != lifetimes_[out].first)
      continue;
    auto &lifetime = arenaLifetimes[arenaIndex.at(out)];
    if (lifetime.reuses < 0)
      lifetime.reuses = inIt->second;
  }
  passes::ArenaPlan arena = passes::planArena(arenaLifetimes);
  for (size_t i = 0; i < arenaIds.size(); ++i)
    plan_.buffers[arenaIds[i]].arenaOffset = arena.offsets[i];
  plan_.arenaBytes = arena.arenaBytes;
  plan_.unplannedBytes = arena.unplannedBytes;
  // Derived values live as long as the model: one after another, nothing reused.
  for (PlanBuffer &buffer : plan_.buffers)
    if (buffer.storage == Storage::Derived) {
      buffer.arenaOffset = plan_.derivedBytes;
      plan_.derivedBytes +=
          (buffer.bytes + kDerivedAlignment - 1) / kDerivedAlignment * kDerivedAlignment;
    }
  return std::move(plan_);
}

} // namespace

Expected<LaunchPlan>
buildLaunchPlan(const ir::Graph &graph, const passes::FusionPlan &plan,
                const std::vector<std::optional<lower::LoweredKernel>> &kernels,
                const std::function<runtime::KernelEntry(std::string_view)> &lookup,
                DerivedValues derived) {
  return PlanBuilder(graph, plan, derived).build(kernels, lookup);
}

} // namespace kiln::compiler
