// Runs and times one group's candidate kernels on the tuner's target: the CPU
// through the host JIT, or a device (the simulator, a GPU) through the
// runtime::Device interface. The timer owns the group's buffers and rotating
// input sets; each candidate brings its own workspaces.
#pragma once

#include "codegen/Target.h"
#include "compiler/Compile.h"
#include "compiler/tuner/GroupProblem.h"
#include "passes/lower/Lower.h"
#include "runtime/Device.h"
#include "support/Error.h"
#include "support/HostTensor.h"

#include <functional>
#include <memory>
#include <vector>

namespace kiln::tuning {

/// A candidate compiled and loaded, with its workspaces.
class LoadedCandidate {
public:
  virtual ~LoadedCandidate() = default;
};

class KernelTimer {
public:
  virtual ~KernelTimer() = default;

  /// Compiles and loads one lowered candidate. Safe to call from several
  /// threads at once when concurrentLoads().
  virtual Expected<std::unique_ptr<LoadedCandidate>> load(const lower::LoweredKernel &kernel) = 0;
  virtual bool concurrentLoads() const = 0;
  /// A library's kernel (cuDNN) for the group: it takes the group's inputs
  /// then its output, and no workspaces. Only device timers run one.
  virtual Expected<std::unique_ptr<LoadedCandidate>>
  loadLibrary(std::shared_ptr<const runtime::DeviceKernel> kernel) {
    (void)kernel;
    return makeError(ErrorCode::Unsupported, "library kernels run only on a device");
  }

  /// Runs the candidate once on input set 0 with its output poisoned (NaN or
  /// all ones) and returns the output, to be checked against the reference.
  virtual Expected<HostTensor> runForCheck(LoadedCandidate &candidate) = 0;

  /// `warmups` untimed runs, then `runs` timed ones, each after a cache flush
  /// and on the next input set; seconds per timed run.
  virtual Expected<std::vector<double>> time(LoadedCandidate &candidate, int warmups,
                                             int runs) = 0;
};

/// A timer on this CPU. `flushBytes`: bytes touched before each timed run
/// (-1: twice the target's L3, at most 64 MiB). Candidates are compiled
/// through the kernel cache `cacheOptions` name (its useKernelCache and
/// kernelCacheDir), so a repeated sweep or tuning run links them instead.
Expected<std::unique_ptr<KernelTimer>>
makeCpuKernelTimer(const codegen::CpuTarget &target, const GroupProblem &problem,
                   int64_t flushBytes, const CompileOptions &cacheOptions = {});

/// Loads a kernel on a device (the loader decides how: the simulator
/// interprets kernel IR, a GPU loads a compiled module).
using DeviceKernelLoader = std::function<Expected<std::shared_ptr<const runtime::DeviceKernel>>(
    const kir::Kernel &kernel)>;

/// A timer on `device`, timing with its events. `flushBytes`: bytes filled
/// before each timed run to evict the L2 (-1: twice `l2Bytes`).
Expected<std::unique_ptr<KernelTimer>>
makeDeviceKernelTimer(std::shared_ptr<runtime::Device> device, DeviceKernelLoader loader,
                      const GroupProblem &problem, int64_t l2Bytes, int64_t flushBytes);

} // namespace kiln::tuning
