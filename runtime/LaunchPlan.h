// The launch plan: everything a compiled model needs at run time and nothing
// from the compiler — buffers with their storage, kernels in order, constants.
// It is what an AOT bundle will serialize.
#pragma once

#include "ir/graph/SizeExpr.h"
#include "runtime/Device.h"
#include "runtime/dist/Communicator.h"
#include "support/DType.h"
#include "support/Error.h"
#include "support/HostTensor.h"

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace kiln::runtime {

/// A CPU kernel: args[i] is the base address of the kernel's i-th buffer.
using CpuKernelFn = void (*)(void *const *args);

/// A kernel called through an object rather than a function pointer: one that
/// needs state of its own (the SIMT simulator's interpreter) and may fail.
class KernelInvoker {
public:
  virtual ~KernelInvoker() = default;
  /// Runs the kernel on its buffers (args[i]: the i-th parameter's base address).
  virtual Expected<void> invoke(void *const *args) const = 0;
};

/// How a step calls its kernel: exactly one of the three is set. Host plans
/// use `fn` or `invoker`; device plans (CUDA, the simulator as a device) use
/// `deviceKernel`, launched on the model's device.
struct KernelEntry {
  CpuKernelFn fn = nullptr;
  std::shared_ptr<const KernelInvoker> invoker;
  std::shared_ptr<const DeviceKernel> deviceKernel;

  static KernelEntry host(CpuKernelFn fn) { return {fn, nullptr, nullptr}; }
  static KernelEntry invoked(std::shared_ptr<const KernelInvoker> invoker) {
    return {nullptr, std::move(invoker), nullptr};
  }
  static KernelEntry device(std::shared_ptr<const DeviceKernel> kernel) {
    return {nullptr, nullptr, std::move(kernel)};
  }

  explicit operator bool() const {
    return fn != nullptr || invoker != nullptr || deviceKernel != nullptr;
  }
};

/// Where a buffer's bytes live during a run.
enum class Storage {
  Input,    ///< a graph input, read in place from the caller's tensor
  Param,    ///< a parameter, from run()'s tensors or the ones bound to the model
  Constant, ///< baked into the model (LaunchPlan::constants)
  Arena,    ///< an intermediate or workspace at `arenaOffset` in the run's arena
  Output,   ///< a graph output written by a kernel straight into the result tensor
  Alias,    ///< the same bytes as buffer `aliasOf` (a reshape)
  Derived,  ///< computed from parameters and constants only (a filter's transpose or packing):
            ///< kept between runs at `arenaOffset` in the model's derived block, and computed
            ///< again only when a parameter it depends on changes (docs/architecture.md)
  Sizes,    ///< the run's value of each size symbol (i64, LaunchPlan::symbols' order), which
            ///< kernels with runtime sizes read (docs/dynamic-shapes.md)
};

struct PlanBuffer {
  std::string name; ///< the input/param/output name, or a descriptive one
  DType dtype = DType::F32;
  std::vector<int64_t> shape; ///< a symbolic size's largest value (and `bytes` that shape's)
  int64_t bytes = 0;
  Storage storage = Storage::Arena;
  int64_t arenaOffset = 0; ///< Arena: offset in the run's arena; Derived: in the derived block
  int binding = -1;        ///< Input/Param/Output: index in inputs/params/outputs; Constant: in constants
  int aliasOf = -1;        ///< Alias only
  /// Symbolic models: each dim's size (empty when `shape` is exact), evaluated per run.
  std::vector<ir::SizeExpr> sizes{};
};

/// What a step does.
enum class StepKind : uint8_t {
  Kernel,    ///< launches `entry` on `args`
  AllReduce, ///< args {source, result}: copies source into result (unless the same bytes),
             ///< then all-reduces result in place with RunOptions::communicator
};

std::string_view stepKindName(StepKind kind);

/// One kernel call, or one collective (then `entry` is empty).
struct PlanStep {
  std::string kernelName;
  KernelEntry entry;
  std::vector<int> args; ///< buffer ids, in the kernel's parameter order
  /// The work of one launch, counted from the kernel IR (for the profiler):
  /// arithmetic operations (an FMA counts 2) and bytes read and written in
  /// global memory, each buffer element counted once.
  int64_t flops = 0;
  int64_t bytesMoved = 0;
  StepKind kind = StepKind::Kernel;
  dist::ReduceOp reduceOp = dist::ReduceOp::Sum; ///< AllReduce only
  /// A step that reads only parameters, constants and derived buffers and writes a derived
  /// buffer (and its own workspaces): a run skips it while its value is current.
  bool derived = false;
  /// Derived steps: the parameters (indices in LaunchPlan::params) its value depends on,
  /// directly or through earlier derived steps; a new value of one of them makes it stale.
  std::vector<int> derivedFrom{};
};

/// A named input, parameter or output and its buffer.
struct PlanBinding {
  std::string name;
  int buffer = -1;
};

/// A state update resolved against a plan: after a run, `bytes` bytes of
/// output `output` from `byteOffset` on become bound parameter `param`.
struct PlanStateCopy {
  size_t output = 0; ///< index in LaunchPlan::outputs
  int64_t byteOffset = 0;
  int64_t bytes = 0;
  size_t param = 0; ///< index in LaunchPlan::params
};

struct LaunchPlan {
  std::vector<PlanBuffer> buffers;
  std::vector<PlanStep> steps;
  std::vector<PlanBinding> inputs, params, outputs;
  std::vector<HostTensor> constants;
  int64_t arenaBytes = 0;       ///< the planned arena
  int64_t unplannedBytes = 0;   ///< every intermediate and workspace in its own allocation
  int64_t derivedBytes = 0;     ///< the derived block (Storage::Derived buffers), kept between runs
  /// A model compiled for a range of sizes: its size symbols, bound per run from the inputs'
  /// shapes, and the buffer kernels read their values from (-1: none reads them).
  std::vector<ir::SizeSymbol> symbols{};
  int sizesBuffer = -1;
};

} // namespace kiln::runtime
