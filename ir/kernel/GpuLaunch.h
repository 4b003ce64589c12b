// The launch shape of a GPU kernel, read off its loop structure: block loops
// give the grid, thread loops the block, shared allocations the shared memory.
//
// A GPU kernel has the shape of a CUDA kernel: the body is a nest of block.*
// loops (each axis at most once, starting at 0, constant extent), with lets and
// shared allocations between them, around exactly one nest of thread.* loops
// (the same rules) whose body is what each thread runs. Barriers, shuffles,
// and register/local allocations live inside the thread nest; shared
// allocations outside it (one per block).
#pragma once

#include "ir/kernel/KernelIR.h"
#include "support/Error.h"

#include <array>
#include <cstdint>
#include <utility>
#include <vector>

namespace kiln::kir {

/// Loops over the grid's blocks, over a block's threads, or either (a launch dimension).
inline bool isBlockLoop(ForKind kind) {
  return kind == ForKind::BlockX || kind == ForKind::BlockY || kind == ForKind::BlockZ;
}
inline bool isThreadLoop(ForKind kind) {
  return kind == ForKind::ThreadX || kind == ForKind::ThreadY || kind == ForKind::ThreadZ;
}
inline bool isLaunchLoop(ForKind kind) { return isBlockLoop(kind) || isThreadLoop(kind); }
/// The grid axis of a block or thread loop: 0 (x), 1 (y) or 2 (z).
int launchAxis(ForKind kind);

/// Shared memory a block may declare statically; a kernel needing more takes
/// all of its shared buffers from dynamic shared memory, launched with that
/// size (and the opt-in attribute, up to the target's maxSharedBytesPerBlock).
inline constexpr int64_t kStaticSharedLimit = 48 * 1024;

struct GpuLaunch {
  std::array<int64_t, 3> grid{1, 1, 1};  ///< blocks along x, y, z
  std::array<int64_t, 3> block{1, 1, 1}; ///< threads along x, y, z
  int64_t sharedBytes = 0;               ///< shared memory per block: the allocations' sum
  /// Each shared buffer's byte offset in dynamic shared memory, in allocation
  /// order, every one 16-byte aligned (a wgmma operand 1024-byte aligned, where its
  /// swizzle atoms start); `sharedLayoutBytes` is the end of the last.
  std::vector<std::pair<const Buffer *, int64_t>> sharedOffsets;
  int64_t sharedLayoutBytes = 0;
  /// The alignment the layout's base needs: 16, or 1024 when a Wgmma reads a shared buffer or
  /// a TmaLoad fills one.
  /// A kernel needing 1024 takes its shared memory dynamically, rounds the base up itself
  /// (the launch adds the 1024 bytes of slack) and so never depends on how the driver aligns it.
  int64_t sharedAlignment = 16;
  /// The loop variables bound to blockIdx.x/y/z and threadIdx.x/y/z (nullptr where absent).
  std::array<const Var *, 3> blockVars{}, threadVars{};

  int64_t threadsPerBlock() const { return block[0] * block[1] * block[2]; }
  int64_t numBlocks() const { return grid[0] * grid[1] * grid[2]; }
  /// Whether the shared buffers live in dynamic shared memory: their 16-byte aligned layout
  /// (what static declarations would take too) passes the static limit.
  bool dynamicShared() const {
    return sharedLayoutBytes > kStaticSharedLimit || sharedAlignment > 16;
  }
  /// The dynamic shared memory to launch with: the layout's size (and the slack for rounding
  /// its base up to sharedAlignment), or 0 when static.
  int64_t dynamicSharedBytes() const {
    if (!dynamicShared())
      return 0;
    return sharedLayoutBytes + (sharedAlignment > 16 ? sharedAlignment : 0);
  }
  /// The shared memory a block reserves: the dynamic launch size, or the static layout.
  int64_t reservedSharedBytes() const {
    return dynamicShared() ? dynamicSharedBytes() : sharedLayoutBytes;
  }
  /// The byte offset of shared buffer `buffer` in dynamic shared memory (-1: not one).
  int64_t sharedOffset(const Buffer *buffer) const;
};

/// Whether the kernel binds any loop to the GPU grid (a block.* or thread.* loop).
bool isGpuKernel(const Kernel &kernel);

/// The launch shape of `kernel`, or an error naming the kernel and what breaks
/// the structure above (a thread loop outside the nest, a non-constant extent,
/// a shared allocation inside the thread nest, two loops on one axis, a block
/// of more than `maxThreadsPerBlock` threads).
Expected<GpuLaunch> gpuLaunchOf(const Kernel &kernel, int64_t maxThreadsPerBlock = 1024);

} // namespace kiln::kir
