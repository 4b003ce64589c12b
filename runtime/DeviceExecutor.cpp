// The device executor: resident constants and parameters, per-run contexts
// (stream, arena, I/O block, pinned staging, launch graph), timed launches,
// and the communication stream a data-parallel run's all-reduces overlap on.
#include "runtime/DeviceExecutor.h"

#include "runtime/RunSizeBinder.h"

#include "runtime/CollectiveStep.h"

#include <fmt/format.h>

#include <chrono>
#include <cstring>
#include <optional>

namespace kiln::runtime {

namespace {

/// Inputs and outputs share one device block and one pinned block at the
/// same offsets; each starts on a 256-byte boundary (what kernels' vector
/// accesses and the driver's copies like best).
constexpr int64_t kIoAlignment = 256;

int64_t alignUp(int64_t value, int64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

std::string formatMiB(int64_t bytes) {
  return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1 << 20));
}

} // namespace

/// What one run in flight owns. Contexts are pooled, so steady-state runs
/// allocate nothing; one is created per concurrent run.
struct DeviceExecutor::RunContext {
  Stream stream;
  DevicePtr arena = 0;
  DevicePtr io = 0;
  std::byte *staging = nullptr;
  /// Device copies of the parameters passed to run() (0: none yet), kept for
  /// the next run so their addresses stay fixed for the launch graph.
  std::vector<DevicePtr> paramSlots;
  std::vector<Event> events; ///< profiling: start, after inputs, after each step, after outputs
  /// Launch graphs by the buffer addresses they were captured with: a graph
  /// bakes them in, and they change with where parameters and inputs come
  /// from (bound or passed; double-buffered device inputs alternate).
  struct CapturedGraph {
    std::vector<DevicePtr> addresses;
    GraphExec graph;
  };
  std::vector<CapturedGraph> graphs; ///< oldest first
  /// Data parallel: the stream the all_reduce steps run on beside `stream`,
  /// and their events (DeviceCollectives), made by the context's first run
  /// that reduces across ranks.
  std::optional<Stream> communication;
  std::vector<Event> collectiveEvents;
};

/// A context keeps this many launch graphs (two upload slots, with and
/// without passed parameters).
constexpr size_t kGraphsPerContext = 4;

DeviceExecutor::DeviceExecutor(std::shared_ptr<Device> device,
                               std::shared_ptr<DeviceMemoryPool> pool)
    : device_(std::move(device)), pool_(std::move(pool)), peak_(device_->peak()) {}

Expected<std::unique_ptr<DeviceExecutor>> DeviceExecutor::create(
    const LaunchPlan &plan, std::shared_ptr<Device> device,
    std::shared_ptr<DeviceMemoryPool> pool) {
  for (const PlanStep &step : plan.steps)
    KILN_CHECK(step.kind != StepKind::Kernel || step.entry.deviceKernel,
               "device plan step " + step.kernelName + " has no device kernel");
  // Device plans compute every value in each run (compiler::DerivedValues::PerRun).
  for (const PlanBuffer &buffer : plan.buffers)
    if (buffer.storage == Storage::Derived)
      return makeError(ErrorCode::Unsupported,
                       fmt::format("buffer '{}' keeps a derived value between runs, which a "
                                   "device model does not do: the plan was built for the host",
                                   buffer.name));
  std::unique_ptr<DeviceExecutor> executor(new DeviceExecutor(std::move(device), std::move(pool)));
  IoLayout &io = executor->io_;
  if (plan.sizesBuffer >= 0) {
    io.sizesBytes = plan.buffers[static_cast<size_t>(plan.sizesBuffer)].bytes;
    io.bytes = alignUp(io.sizesBytes, kIoAlignment);
  }
  for (const PlanBinding &input : plan.inputs) {
    io.inputOffsets.push_back(io.bytes);
    io.bytes = alignUp(io.bytes + plan.buffers[input.buffer].bytes, kIoAlignment);
  }
  for (const PlanBinding &output : plan.outputs) {
    io.outputOffsets.push_back(io.bytes);
    io.bytes = alignUp(io.bytes + plan.buffers[output.buffer].bytes, kIoAlignment);
  }
  executor->boundParams_.assign(plan.params.size(), 0);

  Device &dev = *executor->device_;
  for (const HostTensor &constant : plan.constants) {
    auto bytes = static_cast<int64_t>(constant.byteSize());
    DevicePtr ptr = 0;
    if (bytes > 0) {
      auto allocated = executor->pool_->allocate(bytes, Stream{});
      if (!allocated)
        return std::unexpected(std::move(allocated).error().withNote(
            fmt::format("while uploading the model's {} constants", plan.constants.size())));
      ptr = *allocated;
      executor->constants_.push_back(ptr); // owned from here, freed by the destructor
      KILN_TRY_VOID(dev.copyToDevice(ptr, constant.bytes().data(), bytes, Stream{}));
    } else {
      executor->constants_.push_back(0);
    }
  }
  KILN_TRY_VOID(dev.synchronize(Stream{}));
  return executor;
}

DeviceExecutor::~DeviceExecutor() {
  for (auto &context : freeContexts_)
    destroyContext(*context);
  for (DevicePtr ptr : constants_)
    if (ptr)
      pool_->release(ptr, Stream{});
  for (DevicePtr ptr : boundParams_)
    if (ptr)
      pool_->release(ptr, Stream{});
}

Expected<DevicePtr> DeviceExecutor::boundSlot(const LaunchPlan &plan, size_t index) {
  if (!boundParams_[index]) {
    int64_t bytes = plan.buffers[plan.params[index].buffer].bytes;
    auto allocated = pool_->allocate(bytes, Stream{});
    if (!allocated)
      return std::unexpected(std::move(allocated).error().withNote(
          fmt::format("while binding parameter '{}' ({})", plan.params[index].name,
                      formatMiB(bytes))));
    boundParams_[index] = *allocated;
  }
  return boundParams_[index];
}

Expected<void> DeviceExecutor::bindParam(const LaunchPlan &plan, size_t index,
                                         const HostTensor &tensor) {
  int64_t bytes = plan.buffers[plan.params[index].buffer].bytes;
  if (bytes == 0)
    return {};
  KILN_TRY(DevicePtr slot, boundSlot(plan, index));
  KILN_TRY_VOID(device_->copyToDevice(slot, tensor.bytes().data(), bytes, Stream{}));
  return device_->synchronize(Stream{});
}

Expected<HostTensor> DeviceExecutor::readParam(const LaunchPlan &plan, size_t index) const {
  const PlanBuffer &buffer = plan.buffers[plan.params[index].buffer];
  HostTensor tensor(buffer.dtype, buffer.shape);
  if (buffer.bytes == 0)
    return tensor;
  KILN_CHECK(boundParams_[index], "readParam of an unbound parameter");
  KILN_TRY_VOID(device_->copyToHost(tensor.bytes().data(), boundParams_[index], buffer.bytes,
                                    Stream{}));
  KILN_TRY_VOID(device_->synchronize(Stream{}));
  return tensor;
}

Expected<void> DeviceExecutor::bindParamFromDevice(const LaunchPlan &plan, size_t index,
                                                   DevicePtr source) {
  int64_t bytes = plan.buffers[plan.params[index].buffer].bytes;
  if (bytes == 0)
    return {};
  KILN_TRY(DevicePtr slot, boundSlot(plan, index));
  if (slot != source)
    KILN_TRY_VOID(device_->copyOnDevice(slot, source, bytes, Stream{}));
  return device_->synchronize(Stream{});
}

Expected<std::unique_ptr<DeviceExecutor::RunContext>> DeviceExecutor::createContext(
    const LaunchPlan &plan) const {
  auto context = std::make_unique<RunContext>();
  KILN_TRY(context->stream, device_->createStream());
  context->paramSlots.assign(plan.params.size(), 0);
  // From here on every failure must undo what was made.
  auto fail = [&](Error error) -> Expected<std::unique_ptr<RunContext>> {
    destroyContext(*context);
    return std::unexpected(std::move(error));
  };
  if (plan.arenaBytes > 0) {
    auto arena = pool_->allocate(plan.arenaBytes, context->stream);
    if (!arena)
      return fail(std::move(arena).error().withNote(
          fmt::format("allocating a run's planned arena of {} (intermediates and workspaces)",
                      formatMiB(plan.arenaBytes))));
    context->arena = *arena;
  }
  if (io_.bytes > 0) {
    auto io = pool_->allocate(io_.bytes, context->stream);
    if (!io)
      return fail(std::move(io).error().withNote(
          fmt::format("allocating a run's inputs and outputs ({}); the planned arena is {}",
                      formatMiB(io_.bytes), formatMiB(plan.arenaBytes))));
    context->io = *io;
    auto staging = device_->allocatePinned(io_.bytes);
    if (!staging)
      return fail(std::move(staging).error().withNote("allocating pinned staging memory"));
    context->staging = static_cast<std::byte *>(*staging);
  }
  return context;
}

void DeviceExecutor::destroyContext(RunContext &context) const {
  for (const auto &captured : context.graphs)
    device_->destroyGraph(captured.graph);
  for (Event event : context.events)
    device_->destroyEvent(event);
  for (Event event : context.collectiveEvents)
    device_->destroyEvent(event);
  if (context.communication) {
    (void)device_->synchronize(*context.communication);
    device_->destroyStream(*context.communication);
  }
  if (context.staging)
    device_->freePinned(context.staging);
  for (DevicePtr slot : context.paramSlots)
    if (slot)
      pool_->release(slot, context.stream);
  if (context.io)
    pool_->release(context.io, context.stream);
  if (context.arena)
    pool_->release(context.arena, context.stream);
  // Work still queued on the stream finishes before the driver destroys it.
  (void)device_->synchronize(context.stream);
  device_->destroyStream(context.stream);
  context = RunContext{};
}

Expected<std::unique_ptr<DeviceExecutor::RunContext>> DeviceExecutor::acquireContext(
    const LaunchPlan &plan) const {
  {
    std::lock_guard lock(contextMutex_);
    if (!freeContexts_.empty()) {
      auto context = std::move(freeContexts_.back());
      freeContexts_.pop_back();
      return context;
    }
  }
  return createContext(plan);
}

void DeviceExecutor::releaseContext(std::unique_ptr<RunContext> context) const {
  std::lock_guard lock(contextMutex_);
  freeContexts_.push_back(std::move(context));
}

Expected<void> DeviceExecutor::prepareCollectives(const LaunchPlan &plan,
                                                  const dist::Communicator *communicator,
                                                  RunContext &context) const {
  if (!DeviceCollectives::needsStream(plan, communicator))
    return {};
  if (!context.communication) {
    KILN_TRY(Stream stream, device_->createStream());
    context.communication = stream; // owned from here, destroyed with the context
  }
  while (context.collectiveEvents.size() < DeviceCollectives::eventsNeeded(plan)) {
    KILN_TRY(Event event, device_->createEvent());
    context.collectiveEvents.push_back(event);
  }
  return {};
}

Expected<void> DeviceExecutor::launchSteps(const LaunchPlan &plan,
                                           const std::vector<DevicePtr> &addresses,
                                           RunContext &context, bool timed,
                                           DeviceCollectives &collectives) const {
  std::vector<DevicePtr> args;
  std::vector<DeviceRange> touched;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    const PlanStep &step = plan.steps[i];
    args.clear();
    touched.clear();
    for (int id : step.args) {
      args.push_back(addresses[id]);
      touched.push_back({addresses[id], plan.buffers[id].bytes});
    }
    // A step that shares bytes with a bucket in flight (reads its sum, or
    // reuses its memory) is ordered after it on the compute stream.
    KILN_TRY_VOID(collectives.waitForOverlap(touched));
    if (step.kind == StepKind::AllReduce)
      KILN_TRY_VOID(collectives.start(static_cast<int>(i), args[0], args[1]));
    else
      KILN_TRY_VOID(step.entry.deviceKernel->launch(args.data(), context.stream));
    if (timed)
      KILN_TRY_VOID(device_->record(context.events[2 + i], context.stream));
  }
  return {};
}

Expected<void> DeviceExecutor::launchThroughGraph(const LaunchPlan &plan,
                                                  const std::vector<DevicePtr> &addresses,
                                                  RunContext &context) const {
  for (const auto &captured : context.graphs)
    if (captured.addresses == addresses)
      return device_->launchGraph(captured.graph, context.stream);
  for (const PlanStep &step : plan.steps)
    if (step.entry.deviceKernel)
      KILN_TRY_VOID(step.entry.deviceKernel->prepare(context.stream));
  KILN_TRY_VOID(device_->beginCapture(context.stream));
  // Plans with collectives are never captured (run()): all_reduce steps here
  // are the copy alone.
  DeviceCollectives copiesOnly(plan, nullptr, *device_, context.stream, {}, {});
  Expected<void> launched = launchSteps(plan, addresses, context, false, copiesOnly);
  Expected<GraphExec> graph = device_->endCapture(context.stream);
  if (!launched) {
    if (graph)
      device_->destroyGraph(*graph);
    return launched;
  }
  if (!graph)
    return std::unexpected(std::move(graph).error());
  if (context.graphs.size() == kGraphsPerContext) {
    device_->destroyGraph(context.graphs.front().graph);
    context.graphs.erase(context.graphs.begin());
  }
  context.graphs.push_back({addresses, *graph});
  return device_->launchGraph(*graph, context.stream);
}

Expected<std::vector<HostTensor>> DeviceExecutor::run(
    const LaunchPlan &plan, std::span<const HostTensor *const> inputs,
    std::span<const HostTensor *const> paramOverrides, const RunOptions &options,
    const DeviceRunExtras &extras) const {
  auto wallStart = std::chrono::steady_clock::now();
  auto inputOnDevice = [&](size_t input) {
    return input < extras.inputAddresses.size() && extras.inputAddresses[input] != 0;
  };
  auto outputOnDevice = [&](size_t output) {
    return output < extras.outputAddresses.size() && extras.outputAddresses[output] != 0;
  };
  auto fetched = [&](size_t output) {
    return output >= extras.fetchOutputs.size() || extras.fetchOutputs[output];
  };

  std::vector<HostTensor> outputs;
  try {
    for (size_t i = 0; i < plan.outputs.size(); ++i) {
      const PlanBuffer &buffer = plan.buffers[plan.outputs[i].buffer];
      if (fetched(i)) // written in full by the copy from the device below
        outputs.push_back(takeOutputTensor(options, plan.outputs[i].name, buffer.dtype,
                                           shapeAtSizes(plan, buffer, extras.sizes)));
      else
        outputs.emplace_back();
    }
  } catch (const std::bad_alloc &) {
    return makeError(ErrorCode::OutOfMemory, "out of host memory allocating the outputs");
  }

  KILN_TRY(std::unique_ptr<RunContext> context, acquireContext(plan));
  RunContext &ctx = *context;
  std::optional<DeviceCollectives> collectives;
  // Every exit after this point waits for the stream, then returns the context.
  auto finish = [&](Expected<void> status) -> Expected<void> {
    // Buckets still in flight (a step failed after them) write this
    // context's memory: the compute stream waits for them before the context
    // is reused, and the communicator's bounded wait comes first, so a peer
    // that never joins cannot hold the stream forever.
    Expected<void> synced;
    if (collectives && collectives->inFlight()) {
      synced = collectives->finish();
      if (synced)
        synced = options.communicator->synchronize(ctx.stream);
    }
    if (synced)
      synced = device_->synchronize(ctx.stream);
    if (!synced) {
      // A faulting kernel may leave the context unusable: drop it, never reuse it.
      destroyContext(ctx);
      return status ? synced : status;
    }
    releaseContext(std::move(context));
    return status;
  };
  auto fail = [&](Error error) -> Expected<std::vector<HostTensor>> {
    return std::unexpected(finish(std::unexpected(std::move(error))).error());
  };

  bool timed = options.profile != nullptr;
  if (timed)
    while (ctx.events.size() < plan.steps.size() + 3) {
      auto event = device_->createEvent();
      if (!event)
        return fail(std::move(event).error());
      ctx.events.push_back(*event);
    }
  auto record = [&](size_t index) -> Expected<void> {
    return timed ? device_->record(ctx.events[index], ctx.stream) : Expected<void>{};
  };

  // Where every buffer lives on the device during this run.
  std::vector<DevicePtr> addresses(plan.buffers.size(), 0);
  for (size_t id = 0; id < plan.buffers.size(); ++id) {
    const PlanBuffer &buffer = plan.buffers[id];
    switch (buffer.storage) {
    case Storage::Input:
      addresses[id] = inputOnDevice(buffer.binding) ? extras.inputAddresses[buffer.binding]
                                                    : ctx.io + io_.inputOffsets[buffer.binding];
      break;
    case Storage::Output:
      addresses[id] = outputOnDevice(buffer.binding) ? extras.outputAddresses[buffer.binding]
                                                     : ctx.io + io_.outputOffsets[buffer.binding];
      break;
    case Storage::Constant: addresses[id] = constants_[buffer.binding]; break;
    case Storage::Arena: addresses[id] = ctx.arena + buffer.arenaOffset; break;
    case Storage::Derived: KILN_UNREACHABLE("create() refuses derived buffers");
    case Storage::Sizes: addresses[id] = ctx.io; break; // copied with the inputs
    case Storage::Alias: addresses[id] = addresses[buffer.aliasOf]; break;
    case Storage::Param: {
      const HostTensor *override = paramOverrides[buffer.binding];
      if (!override) {
        addresses[id] = boundParams_[buffer.binding];
        break;
      }
      if (buffer.bytes == 0)
        break;
      DevicePtr &slot = ctx.paramSlots[buffer.binding];
      if (!slot) {
        auto allocated = pool_->allocate(buffer.bytes, ctx.stream);
        if (!allocated)
          return fail(std::move(allocated).error().withNote(
              fmt::format("while copying parameter '{}' passed to run()", buffer.name)));
        slot = *allocated;
      }
      addresses[id] = slot;
      if (auto done = device_->copyToDevice(slot, override->bytes().data(), buffer.bytes,
                                            ctx.stream);
          !done)
        return fail(std::move(done).error());
      break;
    }
    }
  }

  // Inputs: into pinned staging, then one asynchronous copy of the input block.
  if (auto done = record(0); !done)
    return fail(std::move(done).error());
  int64_t inputBytes = 0;
  if (io_.sizesBytes > 0) {
    KILN_CHECK(extras.sizes.size() * sizeof(int64_t) == static_cast<size_t>(io_.sizesBytes),
               "a symbolic device run passes each symbol's value");
    std::memcpy(ctx.staging, extras.sizes.data(), static_cast<size_t>(io_.sizesBytes));
    inputBytes = io_.sizesBytes;
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputOnDevice(i))
      continue;
    // A symbolic input is its run's size (at most its buffer's).
    auto bytes = static_cast<int64_t>(inputs[i]->byteSize());
    KILN_CHECK(bytes <= plan.buffers[plan.inputs[i].buffer].bytes,
               "an input's bytes fit its buffer");
    if (bytes > 0)
      std::memcpy(ctx.staging + io_.inputOffsets[i], inputs[i]->bytes().data(),
                  static_cast<size_t>(bytes));
    inputBytes = io_.inputOffsets[i] + bytes;
  }
  if (inputBytes > 0)
    if (auto done = device_->copyToDevice(ctx.io, ctx.staging, inputBytes, ctx.stream); !done)
      return fail(std::move(done).error());
  if (auto done = record(1); !done)
    return fail(std::move(done).error());

  if (options.poisonBuffers) {
    Expected<void> poisoned =
        plan.arenaBytes > 0 ? device_->fill(ctx.arena, 0xFF, plan.arenaBytes, ctx.stream)
                            : Expected<void>{};
    for (size_t i = 0; poisoned && i < plan.outputs.size(); ++i)
      poisoned = device_->fill(outputOnDevice(i) ? extras.outputAddresses[i]
                                                 : ctx.io + io_.outputOffsets[i],
                               0xFF, plan.buffers[plan.outputs[i].buffer].bytes, ctx.stream);
    // A symbolic input's bytes past the run's size: a kernel that reads them (indices past
    // the run's rows) reads poison.
    for (size_t i = 0; poisoned && i < inputs.size(); ++i) {
      if (inputOnDevice(i))
        continue;
      auto used = static_cast<int64_t>(inputs[i]->byteSize());
      int64_t spare = plan.buffers[plan.inputs[i].buffer].bytes - used;
      if (spare > 0)
        poisoned = device_->fill(ctx.io + io_.inputOffsets[i] + used, 0xFF, spare, ctx.stream);
    }
    if (!poisoned)
      return fail(std::move(poisoned).error());
  }

  // Kernels: one by one, or through a launch graph captured for these addresses.
  if (extras.beforeKernels)
    if (auto done = extras.beforeKernels(ctx.stream); !done)
      return fail(std::move(done).error());
  // A collective runs the communicator on every run: it is never replayed from
  // a graph (docs/gpu-runtime.md, "Launch graphs").
  bool useGraph = options.launchGraph && !timed && !hasCollectiveSteps(plan);
  if (useGraph) {
    if (auto done = launchThroughGraph(plan, addresses, ctx); !done)
      return fail(std::move(done).error());
  } else {
    if (auto made = prepareCollectives(plan, options.communicator, ctx); !made)
      return fail(std::move(made).error());
    collectives.emplace(plan, options.communicator, *device_, ctx.stream,
                        ctx.communication.value_or(Stream{}), ctx.collectiveEvents, timed);
    Expected<void> done = launchSteps(plan, addresses, ctx, timed, *collectives);
    // The join: what follows (outputs, state copies, the next run's reuse of
    // the arena) reads or writes the buckets.
    if (done)
      done = collectives->finish();
    if (!done)
      return fail(std::move(done).error());
  }
  // Outputs the caller placed on the device that no kernel wrote there (before
  // afterKernels, which may release a device input they copy).
  for (size_t i = 0; i < plan.outputs.size(); ++i) {
    int buffer = plan.outputs[i].buffer;
    int64_t bytes = plan.buffers[buffer].bytes;
    if (outputOnDevice(i) && bytes > 0 && addresses[buffer] != extras.outputAddresses[i])
      if (auto done = device_->copyOnDevice(extras.outputAddresses[i], addresses[buffer], bytes,
                                            ctx.stream);
          !done)
        return fail(std::move(done).error());
  }
  if (extras.afterKernels)
    if (auto done = extras.afterKernels(ctx.stream); !done)
      return fail(std::move(done).error());
  // State updates: the outputs' new values into the bound parameters. A value
  // that is the parameter itself (unchanged) needs no copy.
  for (const PlanStateCopy &copy : extras.stateCopies) {
    DevicePtr source = addresses[plan.outputs[copy.output].buffer] + copy.byteOffset;
    DevicePtr target = boundParams_[copy.param];
    if (copy.bytes > 0 && source != target)
      if (auto done = device_->copyOnDevice(target, source, copy.bytes, ctx.stream); !done)
        return fail(std::move(done).error());
  }

  // Outputs: each to its place in pinned staging, then to the result tensors.
  int64_t outputBytes = 0;
  for (size_t i = 0; i < plan.outputs.size(); ++i) {
    if (!fetched(i))
      continue;
    int buffer = plan.outputs[i].buffer;
    auto bytes = static_cast<int64_t>(outputs[i].byteSize()); // the run's size
    outputBytes += bytes;
    if (bytes > 0)
      if (auto done = device_->copyToHost(ctx.staging + io_.outputOffsets[i], addresses[buffer],
                                          bytes, ctx.stream);
          !done)
        return fail(std::move(done).error());
  }
  if (auto done = record(plan.steps.size() + 2); !done)
    return fail(std::move(done).error());
  // A peer that never joins a collective would hold the stream forever: the
  // communicator's wait is bounded, names the collective and aborts it (which
  // ends its kernels, so the stream's own wait below returns). The compute
  // stream has joined the communication stream, so waiting for it covers both.
  if (options.communicator && hasCollectiveSteps(plan))
    if (auto synced = options.communicator->synchronize(ctx.stream); !synced)
      return fail(std::move(synced).error());
  if (auto synced = device_->synchronize(ctx.stream); !synced)
    return fail(std::move(synced).error());
  for (size_t i = 0; i < outputs.size(); ++i)
    if (fetched(i) && !outputs[i].bytes().empty())
      std::memcpy(outputs[i].bytes().data(), ctx.staging + io_.outputOffsets[i],
                  outputs[i].bytes().size());

  if (timed) {
    RunProfile &profile = *options.profile;
    profile.device = device_->describe();
    std::vector<double> at(ctx.events.size(), 0.0);
    for (size_t i = 1; i < plan.steps.size() + 3; ++i) {
      auto ms = device_->elapsedMs(ctx.events[0], ctx.events[i]);
      if (!ms)
        return fail(std::move(ms).error());
      at[i] = *ms;
    }
    profile.events.push_back({"inputs", ProfileCategory::CopyToDevice, -1, 0.0, at[1], inputBytes});
    for (size_t i = 0; i < plan.steps.size(); ++i)
      profile.events.push_back({plan.steps[i].kernelName, ProfileCategory::Kernel,
                                static_cast<int>(i), at[1 + i], at[2 + i] - at[1 + i], 0});
    size_t last = plan.steps.size() + 1;
    profile.events.push_back({"outputs", ProfileCategory::CopyToHost, -1, at[last],
                              at[last + 1] - at[last], outputBytes});
    // The buckets, on the communication stream (as the host's on its thread).
    if (collectives)
      if (auto done = collectives->profile(profile, ctx.events[0]); !done)
        return fail(std::move(done).error());
    profile.totalMs = std::chrono::duration<double, std::milli>(
                          std::chrono::steady_clock::now() - wallStart)
                          .count();
  }
  KILN_TRY_VOID(finish({}));
  return outputs;
}

} // namespace kiln::runtime
