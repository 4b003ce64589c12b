// Bundle loading: parse and check every section, then load the host shared
// object (CPU) or the module for the device's architecture (CUDA), bind each
// plan step to its kernel by name, and bind the weights.
#include "runtime/bundle/BundleLoader.h"

#include "runtime/DeviceExecutor.h"
#include "runtime/DeviceMemoryPool.h"
#include "runtime/bundle/GpuArchChoice.h"
#include "runtime/bundle/HostCpu.h"
#include "runtime/bundle/PlanCodec.h"
#include "runtime/bundle/SharedObject.h"
#include "runtime/cache/AtomicFile.h"
#include "runtime/cuda/CudaDevice.h"
#include "runtime/cuda/CudaModule.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>

namespace kiln::runtime::bundle {
namespace {

/// One architecture's sections, checked.
struct ParsedArch {
  std::string name;
  StoredPlan plan;
  std::string_view ptx, cubin;
};

/// A bundle with every section decoded and checked; views point into the file's bytes.
struct ParsedBundle {
  BundleMeta meta;
  std::optional<StoredPlan> hostPlan;
  std::vector<SizeBucketPlan> hostBuckets; ///< checked against hostPlan
  std::string_view hostCode;
  std::vector<ParsedArch> archs;
  NamedTensors weights;
  std::string_view tuning;
};

Expected<std::string_view> requiredSection(const SectionFileView &view, std::string_view name) {
  const std::string_view *section = view.section(name);
  if (!section)
    return makeError(ErrorCode::FormatError, fmt::format("no '{}' section", name));
  return *section;
}

/// Weights must be parameters of the plan, of their type: checked here so
/// a bad bundle fails at parse rather than at bindParams.
Expected<void> checkWeights(const NamedTensors &weights, const LaunchPlan &plan) {
  for (const auto &[name, tensor] : weights) {
    auto binding = std::find_if(plan.params.begin(), plan.params.end(),
                                [&](const PlanBinding &b) { return b.name == name; });
    if (binding == plan.params.end())
      return makeError(ErrorCode::FormatError,
                       fmt::format("section 'weights': '{}' is not a parameter of the model", name));
    const PlanBuffer &buffer = plan.buffers[static_cast<size_t>(binding->buffer)];
    if (buffer.dtype != tensor.dtype() || buffer.shape != tensor.shape())
      return makeError(ErrorCode::FormatError,
                       fmt::format("section 'weights': '{}' is {}, the parameter is {}", name,
                                   tensor.typeStr(),
                                   fmt::format("{}[{}]", dtypeName(buffer.dtype),
                                               fmt::join(buffer.shape, ", "))));
  }
  return {};
}

/// Each bucket runs part of the model's range (checkSizeBucket), smallest first, as
/// CompiledModel::addSizeBucket takes them.
Expected<void> checkBuckets(const std::vector<SizeBucketPlan> &buckets, const LaunchPlan &model) {
  for (size_t i = 0; i < buckets.size(); ++i) {
    auto bad = [&](const std::string &why) {
      return makeError(ErrorCode::FormatError,
                       fmt::format("section '{}': bucket {}: {}", kSizeBucketsSection, i, why));
    };
    if (auto fits = checkSizeBucket(model, buckets[i].upperBounds, buckets[i].plan); !fits)
      return bad(fits.error().message());
    if (i > 0 &&
        !std::ranges::lexicographical_compare(buckets[i - 1].upperBounds, buckets[i].upperBounds))
      return bad("the buckets are not in ascending order");
  }
  return {};
}

Expected<ParsedBundle> parseBundle(std::string_view bytes) {
  KILN_TRY(SectionFileView view, decodeSectionFile(bytes, kBundleFormat));
  ParsedBundle parsed;
  KILN_TRY(std::string_view metaText, requiredSection(view, kMetaSection));
  KILN_TRY(parsed.meta, decodeMeta(metaText));
  if (parsed.meta.target == BundleTarget::Cpu) {
    KILN_TRY(std::string_view planBytes, requiredSection(view, kHostPlanSection));
    KILN_TRY(StoredPlan plan, decodePlan(planBytes, kHostPlanSection, /*requireDims=*/false));
    parsed.hostPlan = std::move(plan);
    KILN_TRY(parsed.hostCode, requiredSection(view, kHostCodeSection));
    if (const std::string_view *buckets = view.section(kSizeBucketsSection)) {
      KILN_TRY(parsed.hostBuckets, decodeSizeBuckets(*buckets, kSizeBucketsSection));
      KILN_TRY_VOID(checkBuckets(parsed.hostBuckets, parsed.hostPlan->plan));
    }
  } else {
    for (const std::string &arch : parsed.meta.gpuArchs) {
      KILN_TRY_VOID(parseArchName(arch));
      ParsedArch code;
      code.name = arch;
      std::string planName = gpuSectionName(arch, "plan");
      KILN_TRY(std::string_view planBytes, requiredSection(view, planName));
      KILN_TRY(code.plan, decodePlan(planBytes, planName, /*requireDims=*/true));
      KILN_TRY(code.ptx, requiredSection(view, gpuSectionName(arch, "ptx")));
      if (const std::string_view *cubin = view.section(gpuSectionName(arch, "cubin")))
        code.cubin = *cubin;
      parsed.archs.push_back(std::move(code));
    }
  }
  if (const std::string_view *weights = view.section(kWeightsSection)) {
    KILN_TRY(parsed.weights, decodeTensors(*weights, kWeightsSection));
    if (parsed.hostPlan)
      KILN_TRY_VOID(checkWeights(parsed.weights, parsed.hostPlan->plan));
    for (const ParsedArch &arch : parsed.archs)
      KILN_TRY_VOID(checkWeights(parsed.weights, arch.plan.plan));
  }
  if (const std::string_view *tuning = view.section(kTuningSection))
    parsed.tuning = *tuning;
  return parsed;
}

Expected<CompiledModel> loadHost(ParsedBundle &parsed, const BundleLoadOptions &options,
                                 std::string &code) {
  const BundleMeta &meta = parsed.meta;
  KILN_TRY_VOID(checkHostCpu(meta.cpuTriple, meta.cpuName, meta.cpuFeatures,
                             options.assumeCpuFeatures ? *options.assumeCpuFeatures
                                                       : hostCpuFeatures()));
  KILN_TRY(std::shared_ptr<SharedObject> object,
           SharedObject::load(parsed.hostCode, "the bundle's host code"));
  // The model of the whole range and each bucket's share the object's kernels.
  auto modelOf = [&](LaunchPlan plan) -> Expected<CompiledModel> {
    for (PlanStep &step : plan.steps) {
      if (step.kind != StepKind::Kernel)
        continue; // a collective calls the run's communicator
      auto fn = reinterpret_cast<CpuKernelFn>(object->symbol(step.kernelName));
      if (!fn)
        return makeError(ErrorCode::FormatError,
                         fmt::format("the host code has no kernel '{}'", step.kernelName));
      step.entry = KernelEntry::host(fn);
    }
    return CompiledModel(std::move(plan), std::shared_ptr<const void>(object));
  };
  KILN_TRY(CompiledModel model, modelOf(std::move(parsed.hostPlan->plan)));
  for (SizeBucketPlan &bucket : parsed.hostBuckets) {
    KILN_TRY(CompiledModel bucketModel, modelOf(std::move(bucket.plan)));
    KILN_TRY_VOID(model.addSizeBucket(bucket.upperBounds, std::move(bucketModel)));
  }
  code = fmt::format("host shared object ({}, {})", meta.cpuTriple, meta.cpuName);
  return model;
}

/// GPU 0 and its memory pool, opened once per process (as compiler::cudaDevice does).
struct GpuHandle {
  std::shared_ptr<cuda::CudaDevice> device;
  std::shared_ptr<DeviceMemoryPool> pool;
};
Expected<GpuHandle> processGpu() {
  static Expected<GpuHandle> handle = []() -> Expected<GpuHandle> {
    KILN_TRY(std::shared_ptr<cuda::CudaDevice> device, cuda::openCudaDevice(0));
    auto pool = std::make_shared<DeviceMemoryPool>(*device);
    return GpuHandle{std::move(device), std::move(pool)};
  }();
  return handle;
}

Expected<CompiledModel> loadGpu(ParsedBundle &parsed, std::string &code) {
  auto gpu = processGpu();
  if (!gpu)
    return std::unexpected(Error(gpu.error().code(),
                                 fmt::format("a cuda bundle needs a GPU: {}", gpu.error().message())));
  const cuda::CudaDeviceProperties &device = gpu->device->properties();
  int deviceSm = device.ccMajor * 10 + device.ccMinor;
  std::vector<BundleArch> archs;
  for (const ParsedArch &arch : parsed.archs)
    archs.push_back({arch.name, !arch.cubin.empty()});
  KILN_TRY(ArchChoice choice, chooseGpuArch(deviceSm, archs));
  ParsedArch &arch = parsed.archs[choice.index];

  cuda::ModuleImage image;
  image.ptx = std::string(arch.ptx);
  if (choice.useCubin) {
    image.cubin.resize(arch.cubin.size());
    std::memcpy(image.cubin.data(), arch.cubin.data(), arch.cubin.size());
  }
  LaunchPlan plan = std::move(arch.plan.plan);
  image.description = fmt::format("{} kernels for {} from a bundle", plan.steps.size(), arch.name);
  std::shared_ptr<cuda::CudaModule> module;
  if (!plan.steps.empty()) {
    KILN_TRY(module, gpu->device->loadModule(image));
  }
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    PlanStep &step = plan.steps[i];
    if (step.kind != StepKind::Kernel)
      continue; // a collective calls the run's communicator
    KILN_TRY(std::shared_ptr<const DeviceKernel> kernel,
             module->kernel(step.kernelName, *arch.plan.stepDims[i]));
    step.entry = KernelEntry::device(std::move(kernel));
  }
  KILN_TRY(std::unique_ptr<DeviceExecutor> executor,
           DeviceExecutor::create(plan, gpu->device, gpu->pool));
  code = fmt::format("{} on {}", choice.reason, gpu->device->describe());
  return CompiledModel(std::move(plan), std::shared_ptr<const void>(module), std::move(executor));
}

Error inBundle(std::string_view name, const Error &error) {
  Error wrapped(error.code(), fmt::format("bundle '{}': {}", name, error.message()));
  for (const std::string &note : error.notes())
    wrapped.withNote(note);
  return wrapped;
}

Expected<LoadedBundle> loadParsed(ParsedBundle parsed, const BundleLoadOptions &options) {
  std::string code;
  Expected<CompiledModel> model = parsed.meta.target == BundleTarget::Cpu
                                      ? loadHost(parsed, options, code)
                                      : loadGpu(parsed, code);
  if (!model)
    return std::unexpected(std::move(model).error());
  LoadedBundle loaded{std::move(*model), std::move(parsed.meta), std::string(parsed.tuning),
                      std::move(code), false};
  if (options.bindWeights && !parsed.weights.empty()) {
    KILN_TRY_VOID(loaded.model.bindParams(parsed.weights));
    loaded.weightsBound = true;
  }
  return loaded;
}

} // namespace

Expected<LoadedBundle> loadBundleFromBytes(std::string_view bytes,
                                           const BundleLoadOptions &options,
                                           std::string_view name) {
  auto parsed = parseBundle(bytes);
  if (!parsed)
    return std::unexpected(inBundle(name, parsed.error()));
  auto loaded = loadParsed(std::move(*parsed), options);
  if (!loaded)
    return std::unexpected(inBundle(name, loaded.error()));
  return loaded;
}

Expected<LoadedBundle> loadBundle(const std::string &path, const BundleLoadOptions &options) {
  KILN_TRY(std::string bytes, readRegularFile(path, "bundle", kMaxBundleBytes));
  return loadBundleFromBytes(bytes, options, path);
}

Expected<void> checkBundle(std::string_view bytes) {
  KILN_TRY_VOID(parseBundle(bytes));
  return {};
}

} // namespace kiln::runtime::bundle
