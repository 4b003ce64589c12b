// Timing candidates on this CPU: each candidate JIT-compiled alone (through
// the kernel cache), run on rotating input sets after the last-level cache is
// flushed, wall clock.
#include "compiler/tuner/KernelTimer.h"

#include "codegen/llvm/HostBackend.h"
#include "compiler/HostModuleCache.h"
#include "runtime/cpu/ThreadPool.h"
#include "support/AlignedAllocator.h"
#include "support/Elapsed.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>

namespace kiln::tuning {

namespace {

using Bytes = std::vector<uint8_t, AlignedAllocator<uint8_t>>;

/// The most an automatic flush touches (see makeCpuKernelTimer).
constexpr int64_t kMaxAutoFlushBytes = int64_t{64} << 20;

class CpuCandidate final : public LoadedCandidate {
public:
  std::shared_ptr<codegen::HostModule> module;
  codegen::HostKernelFn entry = nullptr;
  /// The prelude (a weight packed once), run before the kernel and not timed: a model runs it
  /// once per weight value (LoweredKernel::prelude).
  codegen::HostKernelFn prelude = nullptr;
  std::vector<Bytes> workspaces;
  bool readsSizes = false; ///< one more parameter, last: the symbols' values
};

class CpuKernelTimer final : public KernelTimer {
public:
  CpuKernelTimer(const codegen::CpuTarget &target, const GroupProblem &problem, int64_t flushBytes,
                 const CompileOptions &cacheOptions)
      : target_(target), cacheOptions_(cacheOptions), inputSets_(problem.inputSets),
        output_(problem.outputType.dtype, problem.outputType.shape), sizes_(problem.sizes),
        flush_(static_cast<size_t>(std::max<int64_t>(flushBytes, 0))) {}

  bool concurrentLoads() const override { return true; }

  Expected<std::unique_ptr<LoadedCandidate>> load(const lower::LoweredKernel &lowered) override {
    const kir::Kernel &kernel = lowered.kernel;
    size_t expectedParams = inputSets_[0].size() + 1 + static_cast<size_t>(lowered.numWorkspaces) +
                            (lowered.readsSizes ? 1 : 0);
    if (kernel.params.size() != expectedParams)
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("kernel {} takes {} buffers, the group has {} inputs, one "
                                   "output and {} workspaces",
                                   kernel.name, kernel.params.size(), inputSets_[0].size(),
                                   lowered.numWorkspaces));
    if (!lowered.followUps.empty()) // no CPU lowering splits a group into several kernels
      return makeError(ErrorCode::Unsupported,
                       fmt::format("kernel {} has {} follow-up kernels; the CPU timer runs "
                                   "one kernel per group",
                                   kernel.name, lowered.followUps.size()));
    auto candidate = std::make_unique<CpuCandidate>();
    candidate->readsSizes = lowered.readsSizes;
    CompileReport unused; // a rejected cache entry is rebuilt; the tuner reports no cache
    std::vector<kir::Kernel> kernels{kernel};
    if (lowered.prelude)
      kernels.push_back(*lowered.prelude);
    KILN_TRY(candidate->module, compiler::hostModuleFor(kernels, target_, cacheOptions_, unused));
    for (const kir::Kernel &compiled : kernels) {
      codegen::HostKernelFn fn = candidate->module->lookupKernel(compiled.name);
      if (fn == nullptr)
        return makeError(
            ErrorCode::CompileError,
            fmt::format("kernel {} is missing from its compiled module", compiled.name));
      (&compiled == &kernels.front() ? candidate->entry : candidate->prelude) = fn;
    }
    for (int w = 0; w < lowered.numWorkspaces; ++w) {
      const kir::BufferPtr &param = kernel.params[inputSets_[0].size() + 1 + size_t(w)];
      candidate->workspaces.emplace_back(
          static_cast<size_t>(param->size * dtypeByteSize(param->dtype)));
    }
    return std::unique_ptr<LoadedCandidate>(std::move(candidate));
  }

  Expected<HostTensor> runForCheck(LoadedCandidate &loaded) override {
    auto &candidate = static_cast<CpuCandidate &>(loaded);
    std::fill(output_.bytes().begin(), output_.bytes().end(), uint8_t{0xFF});
    std::vector<void *> args = argsFor(candidate, 0);
    if (candidate.prelude)
      candidate.prelude(args.data());
    candidate.entry(args.data());
    return output_;
  }

  Expected<std::vector<double>> time(LoadedCandidate &loaded, int warmups, int runs) override {
    auto &candidate = static_cast<CpuCandidate &>(loaded);
    size_t sets = inputSets_.size();
    for (int i = 0; i < warmups; ++i) {
      std::vector<void *> args = argsFor(candidate, static_cast<size_t>(i) % sets);
      if (candidate.prelude)
        candidate.prelude(args.data());
      candidate.entry(args.data());
    }
    std::vector<double> seconds;
    for (int r = 0; r < runs; ++r) {
      std::vector<void *> args = argsFor(candidate, static_cast<size_t>(r) % sets);
      if (candidate.prelude)
        candidate.prelude(args.data());
      flushCaches();
      auto start = std::chrono::steady_clock::now();
      candidate.entry(args.data());
      seconds.push_back(secondsSince(start));
    }
    return seconds;
  }

private:
  std::vector<void *> argsFor(CpuCandidate &candidate, size_t set) {
    std::vector<void *> args;
    for (HostTensor &input : inputSets_[set])
      args.push_back(input.bytes().data());
    args.push_back(output_.bytes().data());
    for (Bytes &workspace : candidate.workspaces)
      args.push_back(workspace.data());
    if (candidate.readsSizes)
      args.push_back(sizes_.data());
    return args;
  }

  /// Reads and writes one byte of every cache line of a buffer larger than
  /// the last-level cache, so the next run finds none of its data in any
  /// cache (memset could use non-temporal stores, which evict nothing). The
  /// kernels' thread pool does it, so every core's private caches are flushed
  /// too, and its workers are awake when the kernel starts, as they are
  /// between a model's back-to-back kernels (a pool idle through a
  /// single-threaded flush would charge each parallel candidate the workers'
  /// wake-up, which on a busy machine is a scheduler time slice).
  void flushCaches() {
    int64_t lines = static_cast<int64_t>(flush_.size() / 64);
    uint8_t *bytes = flush_.data();
    cpu::ThreadPool::global().parallelFor(lines, [bytes](int64_t begin, int64_t end) {
      for (int64_t line = begin; line < end; ++line)
        bytes[line * 64] = static_cast<uint8_t>(bytes[line * 64] + 1);
    });
  }

  codegen::CpuTarget target_;
  CompileOptions cacheOptions_;
  std::vector<std::vector<HostTensor>> inputSets_;
  HostTensor output_;
  std::vector<int64_t> sizes_; ///< GroupProblem::sizes
  Bytes flush_;
};

} // namespace

Expected<std::unique_ptr<KernelTimer>>
makeCpuKernelTimer(const codegen::CpuTarget &target, const GroupProblem &problem,
                   int64_t flushBytes, const CompileOptions &cacheOptions) {
  if (problem.inputSets.empty())
    return makeError(ErrorCode::InvalidArgument, "the group problem has no input set");
  // Twice the last level, but at most kMaxAutoFlushBytes: virtual machines
  // often report the whole package's L3 (hundreds of MiB) where a core sees
  // one complex's, and the flush must stay a small part of each run.
  if (flushBytes < 0)
    flushBytes = std::min<int64_t>(2 * target.l3Bytes, kMaxAutoFlushBytes);
  return std::unique_ptr<KernelTimer>(
      new CpuKernelTimer(target, problem, flushBytes, cacheOptions));
}

} // namespace kiln::tuning
