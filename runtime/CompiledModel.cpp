// Running a launch plan on the host: binding checks, arenas, kernel calls.
#include "runtime/CompiledModel.h"

#include "runtime/CollectiveStep.h"
#include "runtime/CommunicationThread.h"
#include "runtime/DerivedValueCache.h"
#include "runtime/DeviceExecutor.h"
#include "runtime/RunSizeBinder.h"
#include "runtime/SizeBucketRules.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <new>

namespace kiln {

using runtime::LaunchPlan;
using runtime::PlanBuffer;
using runtime::Storage;

struct CompiledModel::Arena {
  AlignedBytes bytes; ///< unspecified contents: every kernel writes before it reads
  /// The derived block of a run that passes its own value of a parameter a derived step
  /// reads (allocated on first such run).
  AlignedBytes derived;
};

struct CompiledModel::SizeBucket {
  std::vector<int64_t> upperBounds;
  std::unique_ptr<CompiledModel> model;
};

namespace {

using Clock = std::chrono::steady_clock;

double millisecondsBetween(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

std::string shapeStr(const std::vector<int64_t> &shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

/// A tensor bound to a plan binding must have its buffer's dtype and shape (a buffer of
/// symbolic sizes: its rank here, its sizes when the run binds the symbols).
Expected<void> checkType(const char *what, std::string_view name, DType dtype,
                         const std::vector<int64_t> &shape, const PlanBuffer &buffer) {
  bool shapeFits =
      buffer.sizes.empty() ? shape == buffer.shape : shape.size() == buffer.sizes.size();
  if (dtype == buffer.dtype && shapeFits)
    return {};
  return makeError(ErrorCode::InvalidArgument,
                   fmt::format("{} '{}' must be {}{}, got {}{}", what, name,
                               dtypeName(buffer.dtype), shapeStr(buffer.shape), dtypeName(dtype),
                               shapeStr(shape)));
}

Expected<void> checkTensor(const char *what, const std::string &name, const HostTensor &tensor,
                           const PlanBuffer &buffer) {
  return checkType(what, name, tensor.dtype(), tensor.shape(), buffer);
}

/// A buffer passed by device address must be one, aligned as kernels assume.
Expected<void> checkDeviceAddress(const char *what, std::string_view name,
                                  runtime::DevicePtr address) {
  if (address == 0)
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("device {} '{}' has a null address", what, name));
  if (address % kDeviceAddressAlignment != 0)
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("device {} '{}' at {:#x} is not {}-byte aligned, as kernels "
                                 "assume",
                                 what, name, address, kDeviceAddressAlignment));
  return {};
}

const runtime::PlanBinding *findBinding(const std::vector<runtime::PlanBinding> &bindings,
                                        std::string_view name) {
  for (const auto &binding : bindings)
    if (binding.name == name)
      return &binding;
  return nullptr;
}

} // namespace

HostTensor CompiledModel::boundView(const HostTensor &bound) {
  Expected<HostTensor> view =
      HostTensor::borrow(bound.dtype(), bound.shape(), bound.bytes(), nullptr);
  KILN_CHECK(view.has_value(), "a bound parameter is borrowable");
  return std::move(*view);
}

CompiledModel::CompiledModel(LaunchPlan plan, std::shared_ptr<const void> codeOwner)
    : CompiledModel(std::move(plan), std::move(codeOwner), nullptr) {}

CompiledModel::CompiledModel(LaunchPlan plan, std::shared_ptr<const void> codeOwner,
                             std::unique_ptr<runtime::DeviceExecutor> executor)
    : plan_(std::move(plan)), codeOwner_(std::move(codeOwner)), executor_(std::move(executor)),
      arenaMutex_(std::make_unique<std::mutex>()) {
  if (!executor_)
    derivedValues_ = std::make_unique<runtime::DerivedValueCache>(plan_);
  if (!plan_.symbols.empty())
    sizeBinder_ = std::make_unique<runtime::RunSizeBinder>(plan_);
}
CompiledModel::CompiledModel(CompiledModel &&) noexcept = default;
CompiledModel &CompiledModel::operator=(CompiledModel &&) noexcept = default;
CompiledModel::~CompiledModel() = default;

Expected<void> CompiledModel::bindParams(const NamedTensors &params) {
  for (const auto &[name, tensor] : params) {
    const runtime::PlanBinding *binding = findBinding(plan_.params, name);
    if (!binding)
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("'{}' is not a parameter of the model", name));
    KILN_TRY_VOID(checkTensor("parameter", name, tensor, plan_.buffers[binding->buffer]));
  }
  for (const auto &[name, tensor] : params) {
    if (executor_) {
      const runtime::PlanBinding *binding = findBinding(plan_.params, name);
      auto index = static_cast<size_t>(binding - plan_.params.data());
      KILN_TRY_VOID(executor_->bindParam(plan_, index, tensor));
    }
    storeParam(name, tensor);
  }
  return {};
}

void CompiledModel::storeParam(const std::string &name, HostTensor tensor) {
  const HostTensor &stored = boundParams_.insert_or_assign(name, std::move(tensor)).first->second;
  if (derivedValues_)
    derivedValues_->paramChanged(
        static_cast<size_t>(findBinding(plan_.params, name) - plan_.params.data()));
  for (SizeBucket &bucket : sizeBuckets_)
    bucket.model->storeParam(name, boundView(stored));
  forwardToRecompiled(name, &stored);
}

void CompiledModel::paramChanged(const std::string &name) {
  if (derivedValues_)
    derivedValues_->paramChanged(
        static_cast<size_t>(findBinding(plan_.params, name) - plan_.params.data()));
  for (SizeBucket &bucket : sizeBuckets_)
    bucket.model->paramChanged(name);
  forwardToRecompiled(name, nullptr);
}

Expected<void> CompiledModel::addSizeBucket(std::vector<int64_t> upperBounds, CompiledModel model) {
  auto refuse = [&](std::string_view why) {
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("size bucket [{}]: {}", fmt::join(upperBounds, ", "), why));
  };
  if (executor_ || model.executor_)
    return refuse("size buckets are for host models");
  if (!sizeBuckets_.empty() &&
      !std::ranges::lexicographical_compare(sizeBuckets_.back().upperBounds, upperBounds))
    return refuse("buckets are added smallest first");
  KILN_TRY_VOID(runtime::checkSizeBucket(plan_, upperBounds, model.plan_));
  auto bucket = std::make_unique<CompiledModel>(std::move(model));
  for (const auto &[name, tensor] : boundParams_)
    bucket->storeParam(name, boundView(tensor));
  sizeBuckets_.push_back({std::move(upperBounds), std::move(bucket)});
  return {};
}

std::vector<std::vector<int64_t>> CompiledModel::sizeBucketBounds() const {
  std::vector<std::vector<int64_t>> bounds;
  for (const SizeBucket &bucket : sizeBuckets_)
    bounds.push_back(bucket.upperBounds);
  std::vector<int64_t> maxima;
  for (const ir::SizeSymbol &symbol : plan_.symbols)
    maxima.push_back(symbol.max);
  bounds.push_back(std::move(maxima));
  return bounds;
}

const CompiledModel *CompiledModel::bucketFor(const std::vector<int64_t> &sizes) const {
  for (const SizeBucket &bucket : sizeBuckets_)
    if (std::ranges::equal(sizes, bucket.upperBounds, std::less_equal<>()))
      return bucket.model.get();
  return nullptr;
}

Expected<void> CompiledModel::checkBindingType(std::string_view name, DType dtype,
                                               const std::vector<int64_t> &shape) const {
  if (const auto *input = findBinding(plan_.inputs, name))
    return checkType("input", name, dtype, shape, plan_.buffers[input->buffer]);
  if (const auto *output = findBinding(plan_.outputs, name))
    return checkType("output", name, dtype, shape, plan_.buffers[output->buffer]);
  if (const auto *param = findBinding(plan_.params, name))
    return checkType("parameter", name, dtype, shape, plan_.buffers[param->buffer]);
  return makeError(ErrorCode::InvalidArgument,
                   fmt::format("'{}' is not an input, output or parameter of the model", name));
}

runtime::Device *CompiledModel::device() const {
  return executor_ ? &executor_->device() : nullptr;
}

std::shared_ptr<runtime::Device> CompiledModel::sharedDevice() const {
  return executor_ ? executor_->sharedDevice() : nullptr;
}

const runtime::DevicePeak *CompiledModel::devicePeak() const {
  return executor_ ? &executor_->peak() : nullptr;
}

MemoryStats CompiledModel::memoryStats() const {
  MemoryStats stats{plan_.arenaBytes, plan_.unplannedBytes, 0, plan_.derivedBytes};
  for (const HostTensor &constant : plan_.constants)
    stats.constantBytes += static_cast<int64_t>(constant.byteSize());
  return stats;
}

std::unique_ptr<CompiledModel::Arena> CompiledModel::acquireArena() const {
  {
    std::lock_guard lock(*arenaMutex_);
    if (!freeArenas_.empty()) {
      auto arena = std::move(freeArenas_.back());
      freeArenas_.pop_back();
      return arena;
    }
  }
  auto arena = std::make_unique<Arena>();
  arena->bytes = AlignedBytes::uninitialized(static_cast<size_t>(plan_.arenaBytes)); // may throw bad_alloc
  return arena;
}

void CompiledModel::releaseArena(std::unique_ptr<Arena> arena) const {
  std::lock_guard lock(*arenaMutex_);
  freeArenas_.push_back(std::move(arena));
}

runtime::CommunicationThread &CompiledModel::communicationThread() const {
  std::lock_guard lock(*arenaMutex_);
  if (!communicationThread_)
    communicationThread_ = std::make_unique<runtime::CommunicationThread>();
  return *communicationThread_;
}

Expected<NamedTensors> CompiledModel::run(const NamedTensors &tensors,
                                          const RunOptions &options) const {
  return runWith(tensors, options, {});
}

Expected<NamedTensors> CompiledModel::runWith(const NamedTensors &tensors,
                                              const RunOptions &options,
                                              std::span<const runtime::PlanStateCopy> stateCopies) const {
  const DeviceInputs *deviceInputs = options.deviceInputs;
  if (deviceInputs && !executor_)
    return makeError(ErrorCode::InvalidArgument,
                     "device inputs were passed to a model that runs on the host");
  KILN_TRY(std::vector<runtime::DevicePtr> outputAddresses, deviceOutputAddresses(options));
  // Every name must be an input or a parameter, with the declared type.
  for (const auto &[name, tensor] : tensors) {
    if (const auto *input = findBinding(plan_.inputs, name)) {
      KILN_TRY_VOID(checkTensor("input", name, tensor, plan_.buffers[input->buffer]));
      if (deviceInputs && deviceInputs->addresses.contains(name))
        return makeError(ErrorCode::InvalidArgument,
                         fmt::format("input '{}' was passed both as a host tensor and on the "
                                     "device",
                                     name));
    } else if (const auto *param = findBinding(plan_.params, name)) {
      KILN_TRY_VOID(checkTensor("parameter", name, tensor, plan_.buffers[param->buffer]));
    } else {
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("'{}' is neither an input nor a parameter of the model", name));
    }
  }
  std::vector<runtime::DevicePtr> inputAddresses;
  if (deviceInputs) {
    for (const auto &[name, address] : deviceInputs->addresses) {
      if (!findBinding(plan_.inputs, name))
        return makeError(ErrorCode::InvalidArgument,
                         fmt::format("device input '{}' is not an input of the model", name));
      KILN_TRY_VOID(checkDeviceAddress("input", name, address));
    }
    for (const auto &input : plan_.inputs) {
      auto it = deviceInputs->addresses.find(input.name);
      inputAddresses.push_back(it == deviceInputs->addresses.end() ? 0 : it->second);
    }
  }
  std::vector<const HostTensor *> inputTensors, paramTensors;
  for (size_t i = 0; i < plan_.inputs.size(); ++i) {
    const auto &input = plan_.inputs[i];
    auto it = tensors.find(input.name);
    if (it != tensors.end()) {
      inputTensors.push_back(&it->second);
    } else if (!inputAddresses.empty() && inputAddresses[i] != 0) {
      inputTensors.push_back(nullptr);
    } else {
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("missing input '{}'", input.name));
    }
  }
  for (const auto &param : plan_.params) {
    auto it = tensors.find(param.name);
    if (it == tensors.end())
      it = boundParams_.find(param.name);
    if (it == boundParams_.end())
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("parameter '{}' has no value: it was neither passed with the "
                                   "inputs nor bound",
                                   param.name));
    paramTensors.push_back(&it->second);
  }

  if (executor_) {
    // Bound parameters already live on the device; only those passed here travel.
    std::vector<const HostTensor *> overrides;
    for (const auto &param : plan_.params) {
      auto it = tensors.find(param.name);
      overrides.push_back(it == tensors.end() ? nullptr : &it->second);
    }
    // A symbolic plan's sizes, bound from the host inputs' shapes (whose copies then take
    // the run's bytes).
    std::vector<int64_t> sizes;
    if (!plan_.symbols.empty()) {
      if (!inputAddresses.empty() || !outputAddresses.empty())
        return makeError(ErrorCode::Unsupported,
                         "a model with size symbols takes host tensors for its inputs and "
                         "outputs so far, not device addresses (docs/dynamic-shapes.md)");
      KILN_TRY(sizes, bindSizes(inputTensors));
    }
    runtime::DeviceRunExtras extras;
    extras.sizes = sizes;
    extras.inputAddresses = inputAddresses;
    extras.outputAddresses = outputAddresses;
    extras.stateCopies = stateCopies;
    if (!stateCopies.empty() || !outputAddresses.empty()) {
      extras.fetchOutputs.assign(plan_.outputs.size(), true);
      for (const auto &copy : stateCopies)
        extras.fetchOutputs[copy.output] = false;
      for (size_t i = 0; i < outputAddresses.size(); ++i)
        if (outputAddresses[i] != 0)
          extras.fetchOutputs[i] = false;
    }
    if (deviceInputs) {
      extras.beforeKernels = deviceInputs->beforeKernels;
      extras.afterKernels = deviceInputs->afterKernels;
    }
    KILN_TRY(std::vector<HostTensor> outputs,
             executor_->run(plan_, inputTensors, overrides, options, extras));
    NamedTensors results;
    for (size_t i = 0; i < plan_.outputs.size(); ++i)
      if (extras.fetchOutputs.empty() || extras.fetchOutputs[i])
        results.emplace(plan_.outputs[i].name, std::move(outputs[i]));
    return results;
  }
  Expected<std::vector<int64_t>> bound = bindSizes(inputTensors);
  if (!bound) {
    // A size outside the range runs on a model compiled for a range that holds it, if any.
    KILN_TRY(std::shared_ptr<const CompiledModel> wider, recompiledFor(inputTensors));
    if (wider)
      return wider->runWith(tensors, options, stateCopies);
    return std::unexpected(std::move(bound).error());
  }
  std::vector<int64_t> sizes = std::move(*bound);
  if (const CompiledModel *bucket = bucketFor(sizes)) {
    // Checked and bound here, against the whole range: the bucket runs. It reads its own
    // views of the bound parameters (so its derived values count as its own).
    for (size_t i = 0; i < plan_.params.size(); ++i) {
      auto bound = boundParams_.find(plan_.params[i].name);
      if (bound != boundParams_.end() && paramTensors[i] == &bound->second)
        paramTensors[i] = &bucket->boundParams_.at(bound->first);
    }
    if (bucket->plan_.symbols.empty())
      sizes.clear(); // the bucket of one size is static
    return bucket->runOnHost(inputTensors, paramTensors, options, std::move(sizes));
  }
  return runOnHost(inputTensors, paramTensors, options, std::move(sizes));
}

Expected<std::vector<int64_t>>
CompiledModel::bindSizes(const std::vector<const HostTensor *> &inputTensors) const {
  if (plan_.symbols.empty())
    return std::vector<int64_t>{};
  std::vector<std::vector<int64_t>> shapes;
  for (const HostTensor *input : inputTensors)
    shapes.push_back(input->shape());
  return (*sizeBinder_)(shapes);
}

Expected<std::vector<runtime::DevicePtr>> CompiledModel::deviceOutputAddresses(
    const RunOptions &options) const {
  const DeviceOutputs *deviceOutputs = options.deviceOutputs;
  if (!deviceOutputs)
    return std::vector<runtime::DevicePtr>{};
  if (!executor_)
    return makeError(ErrorCode::InvalidArgument,
                     "device outputs were passed to a model that runs on the host");
  for (const auto &[name, address] : deviceOutputs->addresses) {
    if (!findBinding(plan_.outputs, name))
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("device output '{}' is not an output of the model", name));
    KILN_TRY_VOID(checkDeviceAddress("output", name, address));
  }
  std::vector<runtime::DevicePtr> addresses;
  for (const auto &output : plan_.outputs) {
    auto it = deviceOutputs->addresses.find(output.name);
    addresses.push_back(it == deviceOutputs->addresses.end() ? 0 : it->second);
  }
  return addresses;
}

const runtime::PlanBinding *CompiledModel::boundParam(std::string_view name) const {
  const runtime::PlanBinding *binding = findBinding(plan_.params, name);
  return binding && boundParams_.contains(std::string(name)) ? binding : nullptr;
}

Expected<void> CompiledModel::setStateUpdates(std::vector<StateUpdate> updates) {
  std::vector<runtime::PlanStateCopy> copies;
  for (const StateUpdate &update : updates) {
    const runtime::PlanBinding *output = findBinding(plan_.outputs, update.output);
    if (!output)
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("state update: '{}' is not an output of the model",
                                   update.output));
    const runtime::PlanBinding *param = boundParam(update.param);
    if (!param)
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("state update: '{}' is not a bound parameter of the model "
                                   "(bind it with bindParams() first)",
                                   update.param));
    const PlanBuffer &from = plan_.buffers[output->buffer];
    const PlanBuffer &to = plan_.buffers[param->buffer];
    if (from.dtype != to.dtype)
      return makeError(ErrorCode::TypeMismatch,
                       fmt::format("state update: output '{}' is {}, parameter '{}' is {}",
                                   update.output, dtypeName(from.dtype), update.param,
                                   dtypeName(to.dtype)));
    if (update.byteOffset < 0 || update.byteOffset + to.bytes > from.bytes ||
        update.byteOffset % static_cast<int64_t>(dtypeByteSize(to.dtype)) != 0)
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("state update: parameter '{}' ({} bytes) does not fit output "
                                   "'{}' ({} bytes) at byte offset {}",
                                   update.param, to.bytes, update.output, from.bytes,
                                   update.byteOffset));
    auto paramIndex = static_cast<size_t>(param - plan_.params.data());
    for (const auto &earlier : copies)
      if (earlier.param == paramIndex)
        return makeError(ErrorCode::InvalidArgument,
                         fmt::format("state update: parameter '{}' is updated twice",
                                     update.param));
    copies.push_back({static_cast<size_t>(output - plan_.outputs.data()), update.byteOffset,
                      to.bytes, paramIndex});
  }
  stateCopies_ = std::move(copies);
  return {};
}

Expected<NamedTensors> CompiledModel::runUpdating(const NamedTensors &tensors,
                                                  const RunOptions &options) {
  for (const auto &copy : stateCopies_)
    if (tensors.contains(plan_.params[copy.param].name))
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("parameter '{}' is state the model updates: it cannot be "
                                   "passed to runUpdating()",
                                   plan_.params[copy.param].name));
  KILN_TRY(NamedTensors results, runWith(tensors, options, stateCopies_));
  if (executor_)
    return results; // the device applied the updates and kept their outputs
  // On the host: the outputs' bytes into the bound tensors, then the outputs go.
  for (const auto &copy : stateCopies_) {
    const HostTensor &output = results.at(plan_.outputs[copy.output].name);
    HostTensor &param = boundParams_.at(plan_.params[copy.param].name);
    std::memcpy(param.bytes().data(), output.bytes().data() + copy.byteOffset,
                static_cast<size_t>(copy.bytes));
    paramChanged(plan_.params[copy.param].name);
  }
  for (const auto &copy : stateCopies_)
    results.erase(plan_.outputs[copy.output].name);
  return results;
}

Expected<NamedTensors> CompiledModel::readParams(std::span<const std::string> names) const {
  NamedTensors values;
  for (const std::string &name : names) {
    const runtime::PlanBinding *binding = boundParam(name);
    if (!binding)
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("'{}' is not a bound parameter of the model", name));
    if (executor_) {
      auto index = static_cast<size_t>(binding - plan_.params.data());
      KILN_TRY(HostTensor value, executor_->readParam(plan_, index));
      values.insert_or_assign(name, std::move(value));
    } else {
      values.insert_or_assign(name, boundParams_.at(name));
    }
  }
  return values;
}

Expected<void> CompiledModel::copyParamsFrom(const CompiledModel &source,
                                             std::span<const std::string> names) {
  for (const std::string &name : names) {
    const runtime::PlanBinding *from = source.boundParam(name);
    const runtime::PlanBinding *to = findBinding(plan_.params, name);
    if (!from || !to)
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("copying parameter '{}': it must be bound in the source "
                                   "model and a parameter of this one",
                                   name));
    const PlanBuffer &a = source.plan_.buffers[from->buffer];
    const PlanBuffer &b = plan_.buffers[to->buffer];
    if (a.dtype != b.dtype || a.shape != b.shape)
      return makeError(ErrorCode::TypeMismatch,
                       fmt::format("copying parameter '{}': it is {}{} in the source model and "
                                   "{}{} here",
                                   name, dtypeName(a.dtype), shapeStr(a.shape),
                                   dtypeName(b.dtype), shapeStr(b.shape)));
  }
  bool sameDevice = executor_ && source.executor_ &&
                    &executor_->device() == &source.executor_->device();
  if (!sameDevice) {
    KILN_TRY(NamedTensors values, source.readParams(names));
    return bindParams(values);
  }
  for (const std::string &name : names) {
    const runtime::PlanBinding *from = source.boundParam(name);
    const runtime::PlanBinding *to = findBinding(plan_.params, name);
    auto sourceIndex = static_cast<size_t>(from - source.plan_.params.data());
    auto index = static_cast<size_t>(to - plan_.params.data());
    KILN_TRY_VOID(executor_->bindParamFromDevice(
        plan_, index, source.executor_->boundParamAddress(sourceIndex)));
    // The host copy only marks the parameter bound: its bytes are stale, and
    // a device model reads bound values from the device (readParams).
    const PlanBuffer &buffer = plan_.buffers[to->buffer];
    boundParams_.try_emplace(name, buffer.dtype, buffer.shape);
  }
  return {};
}

Expected<void> CompiledModel::runSteps(const std::vector<void *> &addresses,
                                       const RunOptions &options,
                                       std::chrono::steady_clock::time_point runStart,
                                       const std::vector<bool> &selected) const {
  using runtime::StepKind;
  runtime::CommunicationThread *thread =
      runtime::HostCollectives::needsThread(plan_, options.communicator) ? &communicationThread()
                                                                         : nullptr;
  runtime::HostCollectives collectives(plan_, options.communicator, thread, options.profile,
                                       runStart);
  std::vector<void *> args;
  std::vector<runtime::ByteRange> touched;
  for (size_t stepIndex = 0; stepIndex < plan_.steps.size(); ++stepIndex) {
    if (!selected.empty() && !selected[stepIndex])
      continue;
    const runtime::PlanStep &step = plan_.steps[stepIndex];
    args.clear();
    touched.clear();
    for (int id : step.args) {
      args.push_back(addresses[id]);
      touched.push_back({static_cast<const std::byte *>(addresses[id]), plan_.buffers[id].bytes});
    }
    // A step that shares bytes with a bucket in flight (reads its sum, or
    // reuses its memory) runs after it.
    KILN_TRY_VOID(collectives.waitForOverlap(touched));
    auto stepStart = Clock::now();
    if (step.kind == StepKind::AllReduce)
      KILN_TRY_VOID(collectives.start(static_cast<int>(stepIndex), args[0], args[1]));
    else if (step.entry.fn)
      step.entry.fn(args.data());
    else
      KILN_TRY_VOID(step.entry.invoker->invoke(args.data()));
    if (options.profile)
      options.profile->events.push_back({step.kernelName, runtime::ProfileCategory::Kernel,
                                         static_cast<int>(stepIndex),
                                         millisecondsBetween(runStart, stepStart),
                                         millisecondsBetween(stepStart, Clock::now()), 0});
  }
  return collectives.finish();
}

Expected<NamedTensors> CompiledModel::runOnHost(const std::vector<const HostTensor *> &inputTensors,
                                                const std::vector<const HostTensor *> &paramTensors,
                                                const RunOptions &options,
                                                std::vector<int64_t> sizes) const {
  auto runStart = Clock::now();
  // A buffer's shape in this run: its sizes at the symbols' values.
  auto shapeInRun = [&](const PlanBuffer &buffer) {
    return runtime::shapeAtSizes(plan_, buffer, sizes);
  };

  // A run that passes its own value of a parameter a derived step reads computes every
  // derived value into a block of its own; the others share the model's, computing what is
  // stale first.
  bool ownDerived = false;
  for (size_t i = 0; i < plan_.params.size(); ++i) {
    auto bound = boundParams_.find(plan_.params[i].name);
    bool passed = bound == boundParams_.end() || paramTensors[i] != &bound->second;
    ownDerived = ownDerived || (passed && derivedValues_->feedsDerivedSteps(i));
  }
  std::unique_ptr<Arena> arena;
  std::vector<HostTensor> outputs;
  uint8_t *derivedBlock = nullptr;
  std::unique_lock<std::mutex> derivedLock;
  try {
    arena = acquireArena();
    for (const auto &output : plan_.outputs) {
      const PlanBuffer &buffer = plan_.buffers[output.buffer];
      // Each is written in full: by its kernel, or copied below.
      outputs.push_back(takeOutputTensor(options, output.name, buffer.dtype, shapeInRun(buffer)));
    }
    if (!derivedValues_->hasDerivedSteps()) {
      // nothing derived: no block, no lock
    } else if (ownDerived) {
      if (arena->derived.size() != static_cast<size_t>(plan_.derivedBytes))
        arena->derived = AlignedBytes::uninitialized(static_cast<size_t>(plan_.derivedBytes));
      derivedBlock = arena->derived.data();
    } else {
      derivedLock = std::unique_lock(derivedValues_->mutex());
      derivedBlock = derivedValues_->block();
    }
  } catch (const std::bad_alloc &) {
    if (arena)
      releaseArena(std::move(arena));
    return makeError(ErrorCode::OutOfMemory,
                     fmt::format("out of host memory allocating the {}-byte arena, the {}-byte "
                                 "derived block and the outputs",
                                 plan_.arenaBytes, plan_.derivedBytes));
  }

  // Resolve every buffer to an address. Aliases refer to earlier buffers.
  std::vector<void *> addresses(plan_.buffers.size(), nullptr);
  for (size_t id = 0; id < plan_.buffers.size(); ++id) {
    const PlanBuffer &buffer = plan_.buffers[id];
    auto address = [](const HostTensor &t) { return const_cast<uint8_t *>(t.bytes().data()); };
    switch (buffer.storage) {
    case Storage::Input: addresses[id] = address(*inputTensors[buffer.binding]); break;
    case Storage::Param: addresses[id] = address(*paramTensors[buffer.binding]); break;
    case Storage::Constant: addresses[id] = address(plan_.constants[buffer.binding]); break;
    case Storage::Arena: addresses[id] = arena->bytes.data() + buffer.arenaOffset; break;
    case Storage::Derived: addresses[id] = derivedBlock + buffer.arenaOffset; break;
    case Storage::Output: addresses[id] = outputs[buffer.binding].bytes().data(); break;
    case Storage::Sizes: addresses[id] = sizes.data(); break;
    case Storage::Alias:
      KILN_CHECK(buffer.aliasOf >= 0 && static_cast<size_t>(buffer.aliasOf) < id,
                 "an alias must follow the buffer it aliases");
      addresses[id] = addresses[buffer.aliasOf];
      break;
    }
  }

  if (options.poisonBuffers) {
    // std::ranges::fill, not memset: an empty buffer's data() may be null.
    std::ranges::fill(arena->bytes.span(), 0xFF);
    if (ownDerived)
      std::ranges::fill(arena->derived.span(), 0xFF);
    for (HostTensor &output : outputs)
      std::ranges::fill(output.bytes(), 0xFF);
  }

  // Derived steps read parameters and constants alone, so the stale ones can run first, all
  // together, while no other run touches the block; the rest of the run skips them.
  std::vector<bool> selected;
  if (derivedLock.owns_lock()) {
    std::vector<bool> stale = derivedValues_->staleSteps();
    Expected<void> computed = runSteps(addresses, options, runStart, stale);
    if (!computed) {
      releaseArena(std::move(arena));
      return std::unexpected(std::move(computed).error());
    }
    derivedValues_->markComputed(stale);
    derivedLock.unlock();
    for (const runtime::PlanStep &step : plan_.steps)
      selected.push_back(!step.derived);
  }

  // The steps, then every bucket's all-reduce: both write the arena, which
  // goes back to the pool only once neither can.
  auto done = runSteps(addresses, options, runStart, selected);
  if (!done) {
    releaseArena(std::move(arena));
    return std::unexpected(std::move(done).error());
  }

  // Outputs no kernel wrote in place (an input, a parameter, a constant, an
  // alias, or a value named by two outputs) are copied.
  NamedTensors results;
  for (size_t i = 0; i < plan_.outputs.size(); ++i) {
    const auto &binding = plan_.outputs[i];
    const PlanBuffer &buffer = plan_.buffers[binding.buffer];
    bool writtenInPlace = buffer.storage == Storage::Output && buffer.binding == static_cast<int>(i);
    if (!writtenInPlace && !outputs[i].bytes().empty())
      std::memcpy(outputs[i].bytes().data(), addresses[binding.buffer], outputs[i].bytes().size());
    results.emplace(binding.name, std::move(outputs[i]));
  }
  releaseArena(std::move(arena));
  if (options.profile)
    options.profile->totalMs = millisecondsBetween(runStart, Clock::now());
  return results;
}

} // namespace kiln
