// Heap scratch for large kernel-local buffers (kiln_cpu_scratch_alloc and
// kiln_cpu_scratch_free of codegen/HostKernelAbi.h).
//
// A kernel's parallel body takes its large buffers (packed GEMM panels) on
// entry and gives them back on exit, on every call. From the allocator that
// means fresh pages from the OS each time (sizes this large are mmapped), and
// the first touch of every page faults: measured at 2 to 3 times the kernel's
// own time for a 512x1024x768 GEMM packing 2 MiB per task. So each thread
// keeps the last few blocks it freed and hands them out again.
#include "codegen/HostKernelAbi.h"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <new>

namespace {

constexpr std::size_t kScratchAlignment = 64;
/// Each block starts with a header of this size holding the block's capacity.
constexpr std::size_t kHeaderBytes = kScratchAlignment;
constexpr std::size_t kKeptBlocks = 4;
/// What a thread may keep in all: enough for the largest per-task buffers
/// (kMaxTaskBufferBytes, 16 MiB) and a smaller one beside them.
constexpr std::size_t kMaxKeptBytes = std::size_t{40} << 20;

struct Block {
  std::byte *base = nullptr; ///< what operator new returned: the header
  std::size_t capacity = 0;  ///< usable bytes after the header
};

void releaseBlock(const Block &block) {
  ::operator delete (block.base, std::align_val_t{kScratchAlignment}, std::nothrow);
}

Block headerOf(void *pointer) {
  auto *base = static_cast<std::byte *>(pointer) - kHeaderBytes;
  return {base, *reinterpret_cast<std::size_t *>(base)};
}

/// The blocks one thread keeps; released when the thread ends.
struct ThreadBlocks {
  std::array<Block, kKeptBlocks> blocks{};
  std::size_t keptBytes = 0;

  ~ThreadBlocks() {
    for (const Block &block : blocks)
      if (block.base)
        releaseBlock(block);
  }

  /// The smallest kept block of at least `bytes`, taken out; or none.
  Block take(std::size_t bytes) {
    Block *best = nullptr;
    for (Block &block : blocks)
      if (block.base && block.capacity >= bytes && (!best || block.capacity < best->capacity))
        best = &block;
    if (!best)
      return {};
    Block taken = *best;
    *best = {};
    keptBytes -= taken.capacity;
    return taken;
  }

  /// Keeps `block` in an empty slot, or in place of the smallest kept one when
  /// it is larger (large buffers cost the most to fault in again); else frees it.
  void give(Block block) {
    Block *slot = nullptr;
    for (Block &candidate : blocks)
      if (!candidate.base) {
        slot = &candidate;
        break;
      }
    if (!slot)
      for (Block &candidate : blocks)
        if (candidate.capacity < block.capacity && (!slot || candidate.capacity < slot->capacity))
          slot = &candidate;
    std::size_t evicted = slot && slot->base ? slot->capacity : 0;
    if (!slot || keptBytes - evicted + block.capacity > kMaxKeptBytes) {
      releaseBlock(block);
      return;
    }
    if (slot->base)
      releaseBlock(*slot);
    keptBytes = keptBytes - evicted + block.capacity;
    *slot = block;
  }
};

thread_local ThreadBlocks threadBlocks;

} // namespace

extern "C" void *kiln_cpu_scratch_alloc(int64_t bytes) {
  std::size_t size = bytes > 0 ? static_cast<std::size_t>(bytes) : 1;
  Block block = threadBlocks.take(size);
  if (!block.base) {
    void *base = ::operator new (size + kHeaderBytes, std::align_val_t{kScratchAlignment},
                                 std::nothrow);
    if (!base) {
      std::fprintf(stderr, "kiln: out of memory allocating %lld bytes of kernel scratch\n",
                   static_cast<long long>(bytes));
      std::abort();
    }
    block = {static_cast<std::byte *>(base), size};
    *reinterpret_cast<std::size_t *>(block.base) = size;
  }
  return block.base + kHeaderBytes;
}

extern "C" void kiln_cpu_scratch_free(void *pointer) {
  if (pointer)
    threadBlocks.give(headerOf(pointer));
}
