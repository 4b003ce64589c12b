// Timing candidates on a device through runtime::Device: buffers in device
// memory, an L2 flush by a fill larger than the L2 before each run, device
// events around the launch. Runs on the simulator in tests (whose times mean
// nothing) and unchanged on a GPU.
#include "compiler/tuner/KernelTimer.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <utility>

namespace kiln::tuning {

namespace {

using runtime::DevicePtr;

/// Device memory freed with its device.
class DeviceBuffer {
public:
  DeviceBuffer(runtime::Device &device, DevicePtr ptr) : device_(&device), ptr_(ptr) {}
  DeviceBuffer(DeviceBuffer &&other) noexcept
      : device_(other.device_), ptr_(std::exchange(other.ptr_, 0)) {}
  DeviceBuffer &operator=(DeviceBuffer &&) = delete;
  ~DeviceBuffer() {
    if (ptr_ != 0)
      device_->free(ptr_);
  }
  DevicePtr get() const { return ptr_; }

private:
  runtime::Device *device_;
  DevicePtr ptr_;
};

Expected<DeviceBuffer> allocate(runtime::Device &device, int64_t bytes) {
  // A zero-byte buffer still gets an address kernels may be passed.
  KILN_TRY(DevicePtr ptr, device.allocate(std::max<int64_t>(bytes, 64)));
  return DeviceBuffer(device, ptr);
}

class DeviceCandidate final : public LoadedCandidate {
public:
  /// The group's kernel and its follow-ups, launched in order on the same buffers.
  std::vector<std::shared_ptr<const runtime::DeviceKernel>> kernels;
  std::vector<DeviceBuffer> workspaces;

  Expected<void> launch(const std::vector<DevicePtr> &args, runtime::Stream stream) const {
    for (const auto &kernel : kernels)
      KILN_TRY_VOID(kernel->launch(args.data(), stream));
    return {};
  }
};

/// Events destroyed with their owner.
struct EventPair {
  runtime::Device *device;
  runtime::Event start, end;
  ~EventPair() {
    if (start.handle)
      device->destroyEvent(start);
    if (end.handle)
      device->destroyEvent(end);
  }
};

class DeviceKernelTimer final : public KernelTimer {
public:
  DeviceKernelTimer(std::shared_ptr<runtime::Device> device, DeviceKernelLoader loader,
                    ir::TensorType outputType)
      : device_(std::move(device)), loader_(std::move(loader)),
        outputType_(std::move(outputType)) {}

  Expected<void> upload(const GroupProblem &problem, int64_t flushBytes) {
    runtime::Stream stream;
    for (const std::vector<HostTensor> &set : problem.inputSets) {
      std::vector<DeviceBuffer> buffers;
      for (const HostTensor &input : set) {
        KILN_TRY(DeviceBuffer buffer, allocate(*device_, int64_t(input.byteSize())));
        KILN_TRY_VOID(device_->copyToDevice(buffer.get(), input.bytes().data(),
                                            int64_t(input.byteSize()), stream));
        buffers.push_back(std::move(buffer));
      }
      inputSets_.push_back(std::move(buffers));
    }
    outputBytes_ = outputType_.numElements() * dtypeByteSize(outputType_.dtype);
    KILN_TRY(DeviceBuffer output, allocate(*device_, outputBytes_));
    output_.emplace(std::move(output));
    if (flushBytes > 0) {
      KILN_TRY(DeviceBuffer flush, allocate(*device_, flushBytes));
      flush_.emplace(std::move(flush));
      flushBytes_ = flushBytes;
    }
    return device_->synchronize(stream);
  }

  bool concurrentLoads() const override { return false; }

  Expected<std::unique_ptr<LoadedCandidate>> load(const lower::LoweredKernel &lowered) override {
    const kir::Kernel &kernel = lowered.kernel;
    size_t numInputs = inputSets_[0].size();
    if (kernel.params.size() != numInputs + 1 + size_t(lowered.numWorkspaces))
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("kernel {} takes {} buffers, the group has {} inputs, one "
                                   "output and {} workspaces",
                                   kernel.name, kernel.params.size(), numInputs,
                                   lowered.numWorkspaces));
    auto candidate = std::make_unique<DeviceCandidate>();
    KILN_TRY(auto first, loader_(kernel));
    candidate->kernels.push_back(std::move(first));
    for (const kir::Kernel &followUp : lowered.followUps) {
      KILN_TRY(auto next, loader_(followUp));
      candidate->kernels.push_back(std::move(next));
    }
    for (int w = 0; w < lowered.numWorkspaces; ++w) {
      const kir::BufferPtr &param = kernel.params[numInputs + 1 + size_t(w)];
      KILN_TRY(DeviceBuffer workspace,
               allocate(*device_, param->size * dtypeByteSize(param->dtype)));
      candidate->workspaces.push_back(std::move(workspace));
    }
    return std::unique_ptr<LoadedCandidate>(std::move(candidate));
  }

  Expected<std::unique_ptr<LoadedCandidate>>
  loadLibrary(std::shared_ptr<const runtime::DeviceKernel> kernel) override {
    auto candidate = std::make_unique<DeviceCandidate>();
    candidate->kernels.push_back(std::move(kernel));
    return std::unique_ptr<LoadedCandidate>(std::move(candidate));
  }

  Expected<HostTensor> runForCheck(LoadedCandidate &loaded) override {
    auto &candidate = static_cast<DeviceCandidate &>(loaded);
    runtime::Stream stream;
    KILN_TRY_VOID(device_->fill(output_->get(), 0xFF, outputBytes_, stream));
    KILN_TRY_VOID(candidate.launch(argsFor(candidate, 0), stream));
    HostTensor output(outputType_.dtype, outputType_.shape);
    KILN_TRY_VOID(device_->copyToHost(output.bytes().data(), output_->get(), outputBytes_, stream));
    KILN_TRY_VOID(device_->synchronize(stream));
    return output;
  }

  Expected<std::vector<double>> time(LoadedCandidate &loaded, int warmups, int runs) override {
    auto &candidate = static_cast<DeviceCandidate &>(loaded);
    runtime::Stream stream;
    size_t sets = inputSets_.size();
    for (int i = 0; i < warmups; ++i) {
      KILN_TRY_VOID(candidate.launch(argsFor(candidate, size_t(i) % sets), stream));
    }
    EventPair events{device_.get(), {}, {}};
    KILN_TRY(events.start, device_->createEvent());
    KILN_TRY(events.end, device_->createEvent());
    std::vector<double> seconds;
    for (int r = 0; r < runs; ++r) {
      std::vector<DevicePtr> args = argsFor(candidate, size_t(r) % sets);
      if (flush_)
        KILN_TRY_VOID(device_->fill(flush_->get(), uint8_t(r), flushBytes_, stream));
      KILN_TRY_VOID(device_->record(events.start, stream));
      KILN_TRY_VOID(candidate.launch(args, stream));
      KILN_TRY_VOID(device_->record(events.end, stream));
      KILN_TRY_VOID(device_->synchronize(stream));
      KILN_TRY(double ms, device_->elapsedMs(events.start, events.end));
      seconds.push_back(ms * 1e-3);
    }
    return seconds;
  }

private:
  std::vector<DevicePtr> argsFor(const DeviceCandidate &candidate, size_t set) const {
    std::vector<DevicePtr> args;
    for (const DeviceBuffer &input : inputSets_[set])
      args.push_back(input.get());
    args.push_back(output_->get());
    for (const DeviceBuffer &workspace : candidate.workspaces)
      args.push_back(workspace.get());
    return args;
  }

  std::shared_ptr<runtime::Device> device_;
  DeviceKernelLoader loader_;
  ir::TensorType outputType_;
  std::vector<std::vector<DeviceBuffer>> inputSets_;
  std::optional<DeviceBuffer> output_;
  int64_t outputBytes_ = 0;
  std::optional<DeviceBuffer> flush_;
  int64_t flushBytes_ = 0;
};

} // namespace

Expected<std::unique_ptr<KernelTimer>>
makeDeviceKernelTimer(std::shared_ptr<runtime::Device> device, DeviceKernelLoader loader,
                      const GroupProblem &problem, int64_t l2Bytes, int64_t flushBytes) {
  if (problem.inputSets.empty())
    return makeError(ErrorCode::InvalidArgument, "the group problem has no input set");
  if (flushBytes < 0)
    flushBytes = 2 * l2Bytes;
  auto timer = std::make_unique<DeviceKernelTimer>(std::move(device), std::move(loader),
                                                   problem.outputType);
  KILN_TRY_VOID(timer->upload(problem, flushBytes));
  return std::unique_ptr<KernelTimer>(std::move(timer));
}

} // namespace kiln::tuning
