// CompiledModel: a launch plan with its loaded kernels, ready to run. It holds
// only runtime objects (no graph, no LLVM), and it is safe to run from several
// threads at once: each concurrent run takes its own arena from a pool.
#pragma once

#include "runtime/Device.h"
#include "runtime/LaunchPlan.h"
#include "runtime/Profile.h"
#include "runtime/RunOptions.h"
#include "support/Error.h"
#include "support/HostTensor.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

namespace kiln {

namespace runtime {
class CommunicationThread;
class DerivedValueCache;
class DeviceExecutor;
class RunSizeBinder;
} // namespace runtime

/// State a model keeps between runs: after runUpdating(), the bytes of output
/// `output` from `byteOffset` on become the value of bound parameter `param`
/// (as many bytes as the parameter has). On a device they never leave it.
struct StateUpdate {
  std::string output;
  int64_t byteOffset = 0;
  std::string param;
};

/// Memory a model uses, in bytes.
struct MemoryStats {
  int64_t arenaBytes = 0;     ///< one run's planned arena (intermediates and workspaces)
  int64_t unplannedBytes = 0; ///< the same buffers without reuse
  int64_t constantBytes = 0;  ///< baked-in constants
  int64_t derivedBytes = 0;   ///< values derived from parameters, kept between runs (host)
};

class CompiledModel;

/// Compiles the model again with its size symbols at `ranges` (each holding the range it was
/// compiled for): what compile() gives a model whose runs may pass sizes outside its range.
using SizeRecompiler =
    std::function<Expected<CompiledModel>(std::span<const ir::SizeSymbol> ranges)>;

/// One recompile for a size outside a model's range: which input and dim, its size, the range
/// until then and the range compiled for.
struct SizeRecompile {
  std::string input;
  size_t dim = 0;
  int64_t size = 0;
  ir::SizeSymbol before, after;
  double seconds = 0; ///< the compile's time
  /// "input 'x' dim 0 is 100, outside N in [1, 64]: compiled again for N in [1, 128] in 0.4 s".
  std::string str() const;
};

class CompiledModel {
public:
  /// `codeOwner` keeps the kernels' code alive as long as the model. A model
  /// whose kernels run on a device has an executor for that device; a host
  /// model (CPU kernels) has none.
  CompiledModel(runtime::LaunchPlan plan, std::shared_ptr<const void> codeOwner);
  CompiledModel(runtime::LaunchPlan plan, std::shared_ptr<const void> codeOwner,
                std::unique_ptr<runtime::DeviceExecutor> executor);
  CompiledModel(CompiledModel &&) noexcept;
  CompiledModel &operator=(CompiledModel &&) noexcept;
  ~CompiledModel();

  /// Binds parameters by name so later runs need only the inputs. Each tensor
  /// must name a parameter and match its dtype and shape; the values are copied.
  Expected<void> bindParams(const NamedTensors &params);

  /// Runs the model. `tensors` holds every graph input and any parameters not
  /// bound (they override bound ones); a missing, unknown or mistyped name is
  /// an error naming it. Returns the outputs by name (but those options.deviceOutputs
  /// places on the device).
  Expected<NamedTensors> run(const NamedTensors &tensors, const RunOptions &options = {}) const;

  /// Whether input, output or parameter `name` is `dtype` of `shape`: an error naming it
  /// and both types otherwise, as run() says of a host tensor (for a caller that passes
  /// device addresses, which carry no type).
  Expected<void> checkBindingType(std::string_view name, DType dtype,
                                  const std::vector<int64_t> &shape) const;

  /// Declares the model's state updates (replacing earlier ones). Each output
  /// and parameter must exist with the same dtype, the parameter must be bound
  /// and its bytes fit in the output from byteOffset; a parameter is updated
  /// by one output at most. On error nothing changes.
  Expected<void> setStateUpdates(std::vector<StateUpdate> updates);
  /// run(), then the state updates: the bound parameters take their new
  /// values, and the outputs that state updates read are not returned (they
  /// are not copied to the host). Not for concurrent use with other runs.
  Expected<NamedTensors> runUpdating(const NamedTensors &tensors,
                                     const RunOptions &options = {});
  /// The current values of bound parameters (copied from the device).
  Expected<NamedTensors> readParams(std::span<const std::string> names) const;
  /// Binds `names` to `source`'s bound values of the same parameters (device
  /// to device when both models run on one device).
  Expected<void> copyParamsFrom(const CompiledModel &source, std::span<const std::string> names);

  /// Size buckets (docs/dynamic-shapes.md): `model` is the same graph compiled for size
  /// symbols at most `upperBounds` (one per symbol of the plan, each below this plan's
  /// maximum somewhere), with schedules chosen for those bounds. A run whose sizes fit a
  /// bucket runs there (the smallest that holds them); this model runs the rest. The buckets
  /// share this model's bound parameters. For the compiler, smallest bucket first; a host
  /// model only.
  Expected<void> addSizeBucket(std::vector<int64_t> upperBounds, CompiledModel model);
  /// Each bucket's upper bounds, smallest first, and last this model's own (the maxima).
  std::vector<std::vector<int64_t>> sizeBucketBounds() const;

  /// Sizes outside the range (docs/dynamic-shapes.md, decision 15). With a recompiler, a run
  /// whose input has a size symbol's dim outside the symbol's range compiles the model again
  /// for a range that holds it (down to the size, up to the next power of two), records why
  /// (sizeRecompiles(), and one line to `log` when given) and runs there, as do later runs
  /// that range holds; the recompiled model reads this model's bound parameters. Without one
  /// (the default) such a run is an error naming the input, the dim and the range. A host
  /// model with size symbols only.
  Expected<void> setSizeRecompiler(SizeRecompiler recompiler, std::ostream *log = nullptr);
  /// The recompiles so far, oldest first.
  std::vector<SizeRecompile> sizeRecompiles() const;

  /// The plan of the whole range (a bucket's plan runs the sizes it holds).
  const runtime::LaunchPlan &plan() const { return plan_; }
  MemoryStats memoryStats() const;
  /// The kernel launches of a run whose derived values are current (plan().steps also holds
  /// the derived steps, which run again only when a parameter they read changes).
  size_t numKernels() const {
    return static_cast<size_t>(std::ranges::count(plan_.steps, false, &runtime::PlanStep::derived));
  }
  /// The device the kernels run on, or nullptr for a host model.
  runtime::Device *device() const;
  /// The same device, shared (for objects that must outlive the model's use
  /// of it, such as a batch uploader); null for a host model.
  std::shared_ptr<runtime::Device> sharedDevice() const;
  /// The device's peak figures, or nullptr for a host model.
  const runtime::DevicePeak *devicePeak() const;

private:
  struct Arena;
  struct SizeBucket;
  struct Recompiled;
  /// A bound value read in place (never copied) by a size bucket or a recompiled model: a
  /// bound value is owned and aligned, so it is borrowable.
  static HostTensor boundView(const HostTensor &bound);
  /// The model compiled for a range that holds the sizes of `inputTensors`, some of which are
  /// outside this model's range (compiled now, or earlier); null when nothing is outside it
  /// or there is no recompiler.
  Expected<std::shared_ptr<const CompiledModel>>
  recompiledFor(const std::vector<const HostTensor *> &inputTensors) const;
  /// Bound parameter `name` was stored (`stored`) or changed in place (null): the recompiled
  /// model, if any, reads it too.
  void forwardToRecompiled(const std::string &name, const HostTensor *stored);
  /// The bucket that runs `sizes`, or nullptr for this model.
  const CompiledModel *bucketFor(const std::vector<int64_t> &sizes) const;
  /// Binds `tensor`, already checked, as parameter `name` (a bucket gets a view of the
  /// front model's value), and marks what is derived from it stale everywhere.
  void storeParam(const std::string &name, HostTensor tensor);
  /// The parameter's value changed in place: what is derived from it is stale, here and in
  /// every bucket.
  void paramChanged(const std::string &name);
  std::unique_ptr<Arena> acquireArena() const;
  void releaseArena(std::unique_ptr<Arena> arena) const;

  /// run(); a device model also applies `stateCopies` on the device and
  /// leaves their outputs out. A host model ignores them (runUpdating copies).
  Expected<NamedTensors> runWith(const NamedTensors &tensors, const RunOptions &options,
                                 std::span<const runtime::PlanStateCopy> stateCopies) const;
  /// `sizes`: the value of each of the plan's size symbols in this run (empty when it has none).
  Expected<NamedTensors> runOnHost(const std::vector<const HostTensor *> &inputTensors,
                                   const std::vector<const HostTensor *> &paramTensors,
                                   const RunOptions &options, std::vector<int64_t> sizes) const;
  /// The run's value of each size symbol, bound from the inputs' shapes (docs/dynamic-shapes.md).
  Expected<std::vector<int64_t>>
  bindSizes(const std::vector<const HostTensor *> &inputTensors) const;
  /// The plan's steps on resolved buffer addresses (those `selected` marks; all when it is
  /// empty); returns once every collective has finished, whatever the outcome.
  Expected<void> runSteps(const std::vector<void *> &addresses, const RunOptions &options,
                          std::chrono::steady_clock::time_point runStart,
                          const std::vector<bool> &selected) const;
  const runtime::PlanBinding *boundParam(std::string_view name) const;
  /// options.deviceOutputs per plan output (0: to a host tensor), checked; empty when none.
  Expected<std::vector<runtime::DevicePtr>> deviceOutputAddresses(const RunOptions &options) const;
  /// The host model's communication thread, started on first use.
  runtime::CommunicationThread &communicationThread() const;

  runtime::LaunchPlan plan_;
  std::shared_ptr<const void> codeOwner_;
  /// Declared after the plan and the code owner: destroyed first, while the
  /// kernels its launch graphs refer to still exist.
  std::unique_ptr<runtime::DeviceExecutor> executor_;
  NamedTensors boundParams_;
  /// A host model's derived values for its bound parameters (null for a device model).
  std::unique_ptr<runtime::DerivedValueCache> derivedValues_;
  std::vector<runtime::PlanStateCopy> stateCopies_;
  mutable std::unique_ptr<std::mutex> arenaMutex_;
  mutable std::vector<std::unique_ptr<Arena>> freeArenas_;
  /// A symbolic model's binding of its size symbols from the inputs' shapes (null when static).
  std::unique_ptr<runtime::RunSizeBinder> sizeBinder_;
  /// Smallest first (addSizeBucket).
  std::vector<SizeBucket> sizeBuckets_;
  /// setSizeRecompiler's state (null without one); shared so that this file needs no
  /// definition of it.
  std::shared_ptr<Recompiled> recompiled_;
  /// Host models whose all_reduce steps reduce across ranks: the one thread
  /// that calls the communicator (under arenaMutex_; none until a run needs
  /// it). Joined on destruction, before the plan it reads goes.
  mutable std::unique_ptr<runtime::CommunicationThread> communicationThread_;
};

} // namespace kiln
