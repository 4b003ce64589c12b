// How one run of a compiled model goes: poisoned buffers, profiling, launch
// graphs, inputs already on the device. Its own header, so the executor and
// CompiledModel, which both take it, need not include each other.
#pragma once

#include "runtime/Device.h"
#include "runtime/Profile.h"
#include "support/Error.h"

#include <functional>
#include <map>
#include <string>

namespace kiln {

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

/// Options of one run of a CompiledModel (or of a device executor).
struct RunOptions {
  /// Fill the arena and the output tensors with a NaN bit pattern before the
  /// kernels run, so an element no kernel writes cannot pass for a result.
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
};

} // namespace kiln
