// How one run of a compiled model goes: poisoned buffers, profiling, launch
// graphs, inputs already on the device, outputs written there. Its own header,
// so the executor and CompiledModel, which both take it, need not include each
// other.
#pragma once

#include "runtime/Device.h"
#include "runtime/Profile.h"
#include "support/Error.h"
#include "support/HostTensor.h"

#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

namespace runtime::dist {
class Communicator;
}

/// The alignment of a device buffer passed by address (DeviceInputs, DeviceOutputs): GPU
/// kernels make 16-byte vector accesses to every buffer (codegen/llvm/NvptxEmitter.cpp),
/// as the executor's own allocations allow.
inline constexpr int64_t kDeviceAddressAlignment = 16;

/// Inputs a device model reads where they already are on its device (a batch
/// uploaded on a copy stream, docs/training.md), instead of copying them from
/// host tensors.
struct DeviceInputs {
  /// By input name: the device address of a buffer of that input's type.
  std::map<std::string, runtime::DevicePtr, std::less<>> addresses;
  /// Enqueued on the run's stream just before its kernels (a wait for the
  /// upload's event) and just after them (releasing the upload's buffer).
  std::function<Expected<void>(runtime::Stream)> beforeKernels, afterKernels;
};

/// Outputs a device model writes where the caller wants them on its device (a CUDA
/// torch tensor's memory, docs/python.md) instead of copying them to host tensors.
struct DeviceOutputs {
  /// By output name: the device address of a buffer of that output's type, shared with
  /// no input. The kernel that makes the output writes it there; an output no kernel
  /// writes in place (an input, a parameter, a value two outputs name) is copied there
  /// on the device.
  std::map<std::string, runtime::DevicePtr, std::less<>> addresses;
};

/// Options of one run of a CompiledModel (or of a device executor).
struct RunOptions {
  /// Fill the arena and the output tensors with a NaN bit pattern before the
  /// kernels run, so an element no kernel writes cannot pass for a result (and on a
  /// device, a symbolic input's bytes past the run's size, so rows past the run's that
  /// reach a result show).
  bool poisonBuffers = false;
  /// When set, the run records one timed event per kernel and copy into it
  /// (device events on a GPU, the wall clock on the CPU).
  runtime::RunProfile *profile = nullptr;
  /// Device models: capture the launches into a launch graph (a CUDA graph)
  /// on the first run and replay it on later ones (captured again when the
  /// parameters passed to run() change from bound to passed or back). Ignored
  /// on the CPU, and when profiling (per-kernel timing needs the launches one
  /// by one).
  bool launchGraph = false;
  /// Device models only: inputs already on the device. Those named here are
  /// not passed as host tensors.
  const DeviceInputs *deviceInputs = nullptr;
  /// Device models only: outputs written to device buffers. Those named here are not
  /// returned as host tensors.
  const DeviceOutputs *deviceOutputs = nullptr;
  /// Host tensors of an earlier run to write this run's outputs into: an output
  /// takes the tensor of its name when its dtype and shape match (moving it out
  /// of the map), else a new one. A loop that passes each run's results back
  /// here allocates nothing per run, and a large output pays its first-touch
  /// page faults once instead of every run.
  NamedTensors *recycledOutputs = nullptr;
  /// The ranks an all_reduce step combines its tensor across (docs/distributed.md):
  /// a host communicator for host models, a device one (NCCL) for device models.
  /// None, or one of size 1: all_reduce is the identity.
  runtime::dist::Communicator *communicator = nullptr;
};

/// The host tensor that output `name` is written into: the recycled one of
/// `options` when it matches (taken out of the map), else a new one, whose
/// bytes are uninitialized (every output is written in full).
HostTensor takeOutputTensor(const RunOptions &options, std::string_view name, DType dtype,
                            const std::vector<int64_t> &shape);

} // namespace kiln
