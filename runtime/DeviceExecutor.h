// Runs a launch plan of device kernels on one device: constants and bound
// parameters resident on the device, a planned arena per concurrent run,
// inputs and outputs copied asynchronously through pinned staging, and the
// kernel launches optionally captured into a launch graph and replayed; a
// data-parallel run's all-reduces on a communication stream beside them.
#pragma once

#include "runtime/Device.h"
#include "runtime/DeviceMemoryPool.h"
#include "runtime/LaunchPlan.h"
#include "runtime/RunOptions.h"
#include "support/Error.h"
#include "support/HostTensor.h"

#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

namespace kiln::runtime {

class DeviceCollectives;

/// What a device run does besides copying host inputs in and outputs out.
struct DeviceRunExtras {
  /// Per plan input: the device address to read it from in place, or 0 to
  /// copy the host tensor (empty: every input is a host tensor).
  std::span<const DevicePtr> inputAddresses;
  /// Per plan output: the device address to write it to, or 0 for the run's own
  /// output block (empty: none). Give such an output fetchOutputs false.
  std::span<const DevicePtr> outputAddresses;
  /// Applied on the device after the kernels.
  std::span<const PlanStateCopy> stateCopies;
  /// Per plan output: false leaves it on the device (its host tensor is
  /// returned empty). Empty: every output is copied back.
  std::vector<bool> fetchOutputs;
  /// A plan with size symbols: each symbol's value in this run (LaunchPlan::symbols' order),
  /// bound from the inputs' shapes and checked against the ranges by the caller. The inputs
  /// and outputs then have their sizes at these values.
  std::span<const int64_t> sizes;
  /// Enqueued on the run's stream before and after the kernels.
  std::function<Expected<void>(Stream)> beforeKernels, afterKernels;
};

class DeviceExecutor {
public:
  /// Uploads the plan's constants. Every step of `plan` must be a device kernel.
  static Expected<std::unique_ptr<DeviceExecutor>> create(const LaunchPlan &plan,
                                                          std::shared_ptr<Device> device,
                                                          std::shared_ptr<DeviceMemoryPool> pool);
  ~DeviceExecutor();
  DeviceExecutor(const DeviceExecutor &) = delete;
  DeviceExecutor &operator=(const DeviceExecutor &) = delete;

  /// Keeps a device copy of parameter plan.params[index] (the caller checked
  /// its type). Rebinding overwrites the same device memory, so captured launch
  /// graphs stay valid; it must not overlap a run.
  Expected<void> bindParam(const LaunchPlan &plan, size_t index, const HostTensor &tensor);
  /// Parameter `index`'s bound value, copied back to the host.
  Expected<HostTensor> readParam(const LaunchPlan &plan, size_t index) const;
  /// Binds parameter `index` to a copy of `bytes` at `source` on this device.
  Expected<void> bindParamFromDevice(const LaunchPlan &plan, size_t index, DevicePtr source);
  /// The device address of bound parameter `index` (0: not bound).
  DevicePtr boundParamAddress(size_t index) const { return boundParams_[index]; }

  /// One run: inputs[i] for plan.inputs[i]; paramOverrides[i] for
  /// plan.params[i], or nullptr to use the bound copy (a passed parameter is
  /// copied into the run context's own slot for it). Returns the outputs in
  /// plan.outputs order. Safe to call from several threads at once, unless
  /// `extras` has state copies. inputs[i] is unused (may be null) where
  /// extras.inputAddresses[i] is set.
  Expected<std::vector<HostTensor>> run(const LaunchPlan &plan,
                                        std::span<const HostTensor *const> inputs,
                                        std::span<const HostTensor *const> paramOverrides,
                                        const RunOptions &options,
                                        const DeviceRunExtras &extras = {}) const;

  Device &device() const { return *device_; }
  const std::shared_ptr<Device> &sharedDevice() const { return device_; }
  const DevicePeak &peak() const { return peak_; }

private:
  struct RunContext;
  struct IoLayout {
    /// A symbolic plan's sizes first (at offset 0, copied with the inputs), then the inputs and
    /// the outputs, each at its largest size.
    int64_t sizesBytes = 0;
    std::vector<int64_t> inputOffsets, outputOffsets;
    int64_t bytes = 0;
  };

  DeviceExecutor(std::shared_ptr<Device> device, std::shared_ptr<DeviceMemoryPool> pool);
  /// Bound parameter `index`'s device memory, allocated on first use (its
  /// address never changes after, so captured launch graphs stay valid).
  Expected<DevicePtr> boundSlot(const LaunchPlan &plan, size_t index);
  Expected<std::unique_ptr<RunContext>> createContext(const LaunchPlan &plan) const;
  void destroyContext(RunContext &context) const;
  Expected<std::unique_ptr<RunContext>> acquireContext(const LaunchPlan &plan) const;
  void releaseContext(std::unique_ptr<RunContext> context) const;
  /// Gives the context its communication stream and events when running
  /// `plan` with `communicator` reduces across ranks.
  Expected<void> prepareCollectives(const LaunchPlan &plan, const dist::Communicator *communicator,
                                    RunContext &context) const;
  Expected<void> launchSteps(const LaunchPlan &plan, const std::vector<DevicePtr> &addresses,
                             RunContext &context, bool timed,
                             DeviceCollectives &collectives) const;
  /// Replays the context's launch graph for `addresses`, capturing one first
  /// when it has none for them.
  Expected<void> launchThroughGraph(const LaunchPlan &plan,
                                    const std::vector<DevicePtr> &addresses,
                                    RunContext &context) const;

  std::shared_ptr<Device> device_;
  std::shared_ptr<DeviceMemoryPool> pool_;
  DevicePeak peak_;
  IoLayout io_;
  std::vector<DevicePtr> constants_;   ///< per plan constant
  std::vector<DevicePtr> boundParams_; ///< per plan param (0: not bound)
  mutable std::mutex contextMutex_;
  mutable std::vector<std::unique_ptr<RunContext>> freeContexts_;
};

} // namespace kiln::runtime
