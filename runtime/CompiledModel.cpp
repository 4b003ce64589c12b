// Running a launch plan on the host: binding checks, arenas, kernel calls.
#include "runtime/CompiledModel.h"

#include "runtime/DeviceExecutor.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <new>

namespace kiln {

using runtime::LaunchPlan;
using runtime::PlanBuffer;
using runtime::Storage;

std::string_view runtime::storageName(Storage storage) {
  switch (storage) {
  case Storage::Input: return "input";
  case Storage::Param: return "param";
  case Storage::Constant: return "constant";
  case Storage::Arena: return "arena";
  case Storage::Output: return "output";
  case Storage::Alias: return "alias";
  }
  KILN_UNREACHABLE("storage");
}

struct CompiledModel::Arena {
  std::vector<uint8_t, AlignedAllocator<uint8_t>> bytes;
};

namespace {

using Clock = std::chrono::steady_clock;

double millisecondsBetween(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double, std::milli>(to - from).count();
}

std::string shapeStr(const std::vector<int64_t> &shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

/// The tensor bound to a plan binding must have its buffer's dtype and shape.
Expected<void> checkTensor(const char *what, const std::string &name, const HostTensor &tensor,
                           const PlanBuffer &buffer) {
  if (tensor.dtype() == buffer.dtype && tensor.shape() == buffer.shape)
    return {};
  return makeError(ErrorCode::InvalidArgument,
                   fmt::format("{} '{}' must be {}{}, got {}{}", what, name,
                               dtypeName(buffer.dtype), shapeStr(buffer.shape),
                               dtypeName(tensor.dtype()), shapeStr(tensor.shape())));
}

const runtime::PlanBinding *findBinding(const std::vector<runtime::PlanBinding> &bindings,
                                        std::string_view name) {
  for (const auto &binding : bindings)
    if (binding.name == name)
      return &binding;
  return nullptr;
}

} // namespace

CompiledModel::CompiledModel(LaunchPlan plan, std::shared_ptr<const void> codeOwner)
    : CompiledModel(std::move(plan), std::move(codeOwner), nullptr) {}

CompiledModel::CompiledModel(LaunchPlan plan, std::shared_ptr<const void> codeOwner,
                             std::unique_ptr<runtime::DeviceExecutor> executor)
    : plan_(std::move(plan)), codeOwner_(std::move(codeOwner)), executor_(std::move(executor)),
      arenaMutex_(std::make_unique<std::mutex>()) {}
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
    boundParams_.insert_or_assign(name, tensor);
  }
  return {};
}

runtime::Device *CompiledModel::device() const {
  return executor_ ? &executor_->device() : nullptr;
}

const runtime::DevicePeak *CompiledModel::devicePeak() const {
  return executor_ ? &executor_->peak() : nullptr;
}

MemoryStats CompiledModel::memoryStats() const {
  MemoryStats stats{plan_.arenaBytes, plan_.unplannedBytes, 0};
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
  arena->bytes.resize(static_cast<size_t>(plan_.arenaBytes)); // may throw bad_alloc
  return arena;
}

void CompiledModel::releaseArena(std::unique_ptr<Arena> arena) const {
  std::lock_guard lock(*arenaMutex_);
  freeArenas_.push_back(std::move(arena));
}

Expected<NamedTensors> CompiledModel::run(const NamedTensors &tensors,
                                          const RunOptions &options) const {
  // Every name must be an input or a parameter, with the declared type.
  for (const auto &[name, tensor] : tensors) {
    if (const auto *input = findBinding(plan_.inputs, name)) {
      KILN_TRY_VOID(checkTensor("input", name, tensor, plan_.buffers[input->buffer]));
    } else if (const auto *param = findBinding(plan_.params, name)) {
      KILN_TRY_VOID(checkTensor("parameter", name, tensor, plan_.buffers[param->buffer]));
    } else {
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("'{}' is neither an input nor a parameter of the model", name));
    }
  }
  std::vector<const HostTensor *> inputTensors, paramTensors;
  for (const auto &input : plan_.inputs) {
    auto it = tensors.find(input.name);
    if (it == tensors.end())
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("missing input '{}'", input.name));
    inputTensors.push_back(&it->second);
  }
  for (const auto &param : plan_.params) {
    auto it = tensors.find(param.name);
    if (it == tensors.end())
      it = boundParams_.find(param.name);
    if (it == boundParams_.end())
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("missing parameter '{}' (pass it to run() or bindParams())",
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
    KILN_TRY(std::vector<HostTensor> outputs,
             executor_->run(plan_, inputTensors, overrides, options));
    NamedTensors results;
    for (size_t i = 0; i < plan_.outputs.size(); ++i)
      results.emplace(plan_.outputs[i].name, std::move(outputs[i]));
    return results;
  }
  return runOnHost(inputTensors, paramTensors, options);
}

Expected<NamedTensors> CompiledModel::runOnHost(const std::vector<const HostTensor *> &inputTensors,
                                                const std::vector<const HostTensor *> &paramTensors,
                                                const RunOptions &options) const {
  auto runStart = Clock::now();

  std::unique_ptr<Arena> arena;
  std::vector<HostTensor> outputs;
  try {
    arena = acquireArena();
    for (const auto &output : plan_.outputs) {
      const PlanBuffer &buffer = plan_.buffers[output.buffer];
      outputs.emplace_back(buffer.dtype, buffer.shape);
    }
  } catch (const std::bad_alloc &) {
    return makeError(ErrorCode::OutOfMemory,
                     fmt::format("out of host memory allocating the {}-byte arena and the outputs",
                                 plan_.arenaBytes));
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
    case Storage::Output: addresses[id] = outputs[buffer.binding].bytes().data(); break;
    case Storage::Alias:
      KILN_CHECK(buffer.aliasOf >= 0 && static_cast<size_t>(buffer.aliasOf) < id,
                 "an alias must follow the buffer it aliases");
      addresses[id] = addresses[buffer.aliasOf];
      break;
    }
  }

  if (options.poisonBuffers) {
    // std::ranges::fill, not memset: an empty buffer's data() may be null.
    std::ranges::fill(arena->bytes, 0xFF);
    for (HostTensor &output : outputs)
      std::ranges::fill(output.bytes(), 0xFF);
  }

  std::vector<void *> args;
  for (size_t stepIndex = 0; stepIndex < plan_.steps.size(); ++stepIndex) {
    const runtime::PlanStep &step = plan_.steps[stepIndex];
    args.clear();
    for (int id : step.args)
      args.push_back(addresses[id]);
    auto stepStart = Clock::now();
    if (step.entry.fn) {
      step.entry.fn(args.data());
    } else if (auto done = step.entry.invoker->invoke(args.data()); !done) {
      releaseArena(std::move(arena));
      return std::unexpected(std::move(done).error());
    }
    if (options.profile)
      options.profile->events.push_back({step.kernelName, runtime::ProfileCategory::Kernel,
                                         static_cast<int>(stepIndex),
                                         millisecondsBetween(runStart, stepStart),
                                         millisecondsBetween(stepStart, Clock::now()), 0});
  }

  // Outputs no kernel wrote in place (an input, a parameter, a constant, an
  // alias, or a value named by two outputs) are copied.
  NamedTensors results;
  for (size_t i = 0; i < plan_.outputs.size(); ++i) {
    const auto &binding = plan_.outputs[i];
    const PlanBuffer &buffer = plan_.buffers[binding.buffer];
    bool writtenInPlace = buffer.storage == Storage::Output && buffer.binding == static_cast<int>(i);
    if (!writtenInPlace && buffer.bytes > 0)
      std::memcpy(outputs[i].bytes().data(), addresses[binding.buffer],
                  static_cast<size_t>(buffer.bytes));
    results.emplace(binding.name, std::move(outputs[i]));
  }
  releaseArena(std::move(arena));
  if (options.profile)
    options.profile->totalMs = millisecondsBetween(runStart, Clock::now());
  return results;
}

} // namespace kiln
