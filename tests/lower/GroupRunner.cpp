// The lowering test harness: fusion plan -> lowered kernels -> evaluator or
// JIT, group by group, with poisoned outputs; and the per-dtype tolerances.
#include "GroupRunner.h"

#include "GpuAssemblyCheck.h"

#include "codegen/llvm/HostBackend.h"
#include "ir/kernel/Evaluator.h"
#include "passes/lower/Lower.h"
#include "runtime/sim/Simulator.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace kiln::test {

const char *executorName(Executor executor) {
  switch (executor) {
  case Executor::Evaluator: return "evaluator";
  case Executor::Jit: return "jit";
  case Executor::Simulator: return "simulator";
  }
  return "?";
}

const codegen::CpuTarget &testHostTarget() {
  static const codegen::CpuTarget target = codegen::hostCpuTarget();
  return target;
}

void poisonTensor(HostTensor &tensor) {
  // std::ranges::fill, not memset: an empty tensor's data() may be null.
  std::ranges::fill(tensor.bytes(), isFloatingPoint(tensor.dtype()) ? 0xFF : 0x5A);
}

namespace {

HostTensor constantTensor(const ir::Node &node) {
  const auto &values = ir::getFloats(node.attrs(), "value");
  const ir::TensorType &type = node.type();
  std::vector<double> data(static_cast<size_t>(type.numElements()),
                           values.empty() ? 0.0 : values[0]);
  if (values.size() == data.size())
    data = values;
  return HostTensor::fromDoubles(type.dtype, type.shape, data);
}

struct PlannedKernel {
  const passes::FusionGroup *group;
  lower::LoweredKernel lowered;
};

} // namespace

Expected<NamedTensors> runLoweredGraph(const ir::Graph &graph, const NamedTensors &inputs,
                                       const GroupRunOptions &options) {
  KILN_TRY(passes::FusionPlan plan, passes::planFusion(graph));
  const codegen::CpuTarget &target = testHostTarget();

  // Lower everything first, so the JIT compiles one module for the graph.
  std::vector<PlannedKernel> kernels;
  for (const passes::FusionGroup &group : plan.groups) {
    if (group.kind == passes::GroupKind::Constant || group.kind == passes::GroupKind::Alias)
      continue;
    if (options.executor == Executor::Simulator) {
      KILN_TRY(codegen::GpuTarget gpu, codegen::gpuTargetNamed(options.gpuArch));
      lower::Schedule schedule = options.chooseGpuSchedule
                                     ? options.chooseGpuSchedule(graph, group, gpu)
                                     : lower::defaultSchedule(graph, group, gpu);
      KILN_TRY(lower::LoweredKernel lowered, lower::lowerGroup(graph, group, schedule, gpu));
      if (options.loweredKernels)
        options.loweredKernels->push_back(lowered.kernel);
      kernels.push_back({&group, std::move(lowered)});
      continue;
    }
    lower::Schedule schedule = options.chooseSchedule
                                   ? options.chooseSchedule(graph, group, target)
                                   : lower::defaultSchedule(graph, group, target);
    KILN_TRY(lower::LoweredKernel lowered, lower::lowerGroup(graph, group, schedule, target));
    kernels.push_back({&group, std::move(lowered)});
  }
  if (options.executor == Executor::Simulator && options.checkAssembly) {
    std::vector<kir::Kernel> all;
    for (const PlannedKernel &k : kernels)
      all.push_back(k.lowered.kernel);
    assembleOrBatch(all, fmt::format("graph {}", graph.name()),
                    options.chooseGpuSchedule ? SpillPolicy::Candidate : SpillPolicy::Fail);
  }
  std::shared_ptr<codegen::HostModule> module;
  if (options.executor == Executor::Jit && !kernels.empty()) {
    std::vector<kir::Kernel> all;
    for (const PlannedKernel &k : kernels) {
      if (k.lowered.prelude)
        all.push_back(*k.lowered.prelude);
      all.push_back(k.lowered.kernel);
    }
    KILN_TRY(module, codegen::compileHostModule(all, target));
  }

  std::map<const ir::Value *, HostTensor> values;
  for (const ir::Value *value : graph.inputs())
    values[value] = inputs.at(value->name());
  for (const ir::Value *value : graph.params())
    values[value] = inputs.at(value->name());

  size_t next = 0;
  for (const passes::FusionGroup &group : plan.groups) {
    const ir::TensorType &type = group.root->type();
    if (group.kind == passes::GroupKind::Constant) {
      values[group.root->result()] = constantTensor(*group.root);
      continue;
    }
    if (group.kind == passes::GroupKind::Alias) {
      KILN_CHECK(group.inputs.size() == 1, "an alias group reads one value");
      const HostTensor &source = values.at(group.inputs[0]);
      HostTensor alias(type.dtype, type.shape);
      KILN_CHECK(alias.byteSize() == source.byteSize(), "an alias keeps the byte size");
      std::ranges::copy(source.bytes(), alias.bytes().begin());
      values[group.root->result()] = std::move(alias);
      continue;
    }
    const lower::LoweredKernel &lowered = kernels.at(next++).lowered;
    std::vector<HostTensor> buffers;
    for (const ir::Value *input : group.inputs)
      buffers.push_back(values.at(input));
    buffers.emplace_back(type.dtype, type.shape);
    size_t outIndex = buffers.size() - 1;
    for (size_t i = outIndex + 1; i < lowered.kernel.params.size(); ++i)
      buffers.emplace_back(lowered.kernel.params[i]->dtype,
                           std::vector<int64_t>{lowered.kernel.params[i]->size});
    for (size_t i = outIndex; i < buffers.size(); ++i)
      poisonTensor(buffers[i]);
    KILN_CHECK(buffers.size() == lowered.kernel.params.size(), "one buffer per kernel parameter");
    // A prelude (a weight packed once) runs first, on the same buffers, as the plan runs it.
    std::vector<const kir::Kernel *> launches;
    if (lowered.prelude)
      launches.push_back(&*lowered.prelude);
    launches.push_back(&lowered.kernel);
    for (const kir::Kernel *kernel : launches) {
      if (options.executor == Executor::Evaluator) {
        KILN_TRY_VOID(kir::evaluateKernel(*kernel, buffers));
      } else if (options.executor == Executor::Simulator) {
        KILN_TRY(sim::SimStats stats, sim::simulateKernel(*kernel, buffers));
        (void)stats;
      } else {
        codegen::HostKernelFn fn = module->lookupKernel(kernel->name);
        KILN_CHECK(fn != nullptr, "the JIT module has every kernel");
        std::vector<void *> args;
        for (HostTensor &buffer : buffers)
          args.push_back(buffer.bytes().data());
        fn(args.data());
      }
    }
    values[group.root->result()] = std::move(buffers[outIndex]);
  }

  NamedTensors outputs;
  for (const ir::GraphOutput &output : graph.outputs())
    outputs.emplace(output.name, values.at(output.value));
  return outputs;
}

double toleranceOf(DType dtype) {
  switch (dtype) {
  case DType::F64: return 1e-12;
  case DType::F32: return 1e-5;
  case DType::F16: return 0x1p-9;   // ulp at 1 is 2^-10
  case DType::BF16: return 0x1p-6;  // ulp at 1 is 2^-7
  case DType::F8E4M3: return 0x1p-2; // ulp at 1 is 2^-3
  case DType::F8E5M2: return 0x1p-1; // ulp at 1 is 2^-2
  default: return 0.0;
  }
}

std::string compareTensors(const HostTensor &got, const HostTensor &want, double toleranceScale) {
  if (got.dtype() != want.dtype() || got.shape() != want.shape())
    return fmt::format("type {} differs from the reference's {}", got.typeStr(), want.typeStr());
  double tolerance = toleranceOf(want.dtype()) * toleranceScale;
  std::string report;
  int64_t bad = 0;
  for (int64_t i = 0; i < want.numElements(); ++i) {
    double g = got.getDouble(i), w = want.getDouble(i);
    bool ok = std::isnan(w) ? std::isnan(g)
              : std::isinf(w) ? g == w
                              : std::abs(g - w) <= tolerance * std::max(1.0, std::abs(w));
    if (ok)
      continue;
    if (++bad <= 5)
      report += fmt::format("  element {}: got {} want {}\n", i, g, w);
  }
  if (bad > 0)
    report = fmt::format("{} of {} elements differ (tolerance {:g} x max(1, |want|)):\n{}", bad,
                         want.numElements(), tolerance, report);
  return report;
}

} // namespace kiln::test
