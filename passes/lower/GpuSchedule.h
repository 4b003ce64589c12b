// GPU schedules: plain data saying how a fusion group becomes a GPU kernel
// (blocks, threads, tiles, vector widths). Each group kind has a heuristic
// default and an enumerable space for a GpuTarget (passes/lower/gpu/).
#pragma once

#include <cstdint>

namespace kiln::lower {

/// Elementwise chains, broadcasts, movement and gathers: each thread handles
/// `elementsPerThread` vectors of `vectorWidth` consecutive output elements per
/// grid step (16-byte loads and stores where the group allows, see
/// docs/lowering.md), the grid capped at `maxBlocksPerSm` x SMs with a
/// grid-stride loop beyond.
struct GpuPointwiseSchedule {
  int threadsPerBlock = 256;
  int vectorWidth = 4;       ///< elements per vector access (16 bytes of f32); 1: scalar
  int elementsPerThread = 1; ///< vectors per thread per grid step
  int maxBlocksPerSm = 8;
};

/// A transpose-like group: a tile x tile block of the output per CUDA block,
/// staged through a shared tile padded by one element against bank conflicts;
/// the block has tile x `rowsPerPass` threads, each covering tile / rowsPerPass rows.
struct GpuTransposeSchedule {
  int tile = 32;
  int rowsPerPass = 8; ///< divides tile
};

/// reduce_*, argmax/argmin. Inner reductions (innermost input axis reduced):
/// `rowsPerBlock` output rows per block, threadsPerBlock / rowsPerBlock threads
/// (a power of two) per row, combined with warp shuffles and, past a warp,
/// shared memory; with `vectorWidth` > 1 each thread takes vectors of that
/// many consecutive elements (16-byte loads of the inputs the reduced operand
/// reads elementwise; the innermost axis must hold whole vectors). Outer
/// reductions: a thread per output element (rowsPerBlock 1, scalar).
struct GpuReductionSchedule {
  int threadsPerBlock = 256;
  int rowsPerBlock = 1;
  int vectorWidth = 1;
};

/// softmax, log_softmax, layer_norm as one kernel: rows split like inner
/// reductions (threadsPerBlock / rowsPerBlock threads per row); softmax on a
/// non-innermost axis runs a thread per column (rowsPerBlock 1). `vectorWidth`
/// as for reductions: each pass takes vectors of consecutive row elements.
struct GpuRowNormSchedule {
  int threadsPerBlock = 256;
  int rowsPerBlock = 1;
  int vectorWidth = 1;
};

/// max/avg pooling and global average pooling: a thread per output element.
struct GpuPoolingSchedule {
  int threadsPerBlock = 256;
};

/// matmul and batched matmul: a blockM x blockN output tile per block, K in
/// steps of blockK through shared memory (`stages` buffers: 2 is double
/// buffering), split-K over `splitK` blocks. On CUDA cores (warpM == 0) each
/// thread owns a threadM x threadN register tile; on tensor cores (warpM > 0,
/// docs/gpu-tensor-cores.md) each warp owns a warpM x warpN tile of mma.sync
/// products (with `wgmma`, each warpgroup of wgmma products), the tiles arrive
/// by cp.async in `stages` buffers, and vectorWidth is the elements per async copy.
struct GpuMatMulSchedule {
  int blockM = 64, blockN = 64, blockK = 16;
  int threadM = 4, threadN = 4;
  int stages = 2;
  int vectorWidth = 4;
  int splitK = 1;
  int warpM = 0, warpN = 0;
  /// Tensor cores on sm_90a: warpgroup products (wgmma.mma_async) reading both operands from
  /// shared memory, warpM x warpN being each warpgroup's (128 threads') tile.
  bool wgmma = false;
  /// With wgmma: the tiles arrive by bulk tensor copies (TMA) that one producer warpgroup
  /// issues, the warpM x warpN warpgroups consuming them; stages hand over through mbarriers.
  bool tma = false;
  /// With tma: a persistent grid, as many blocks as the SMs hold at once, each walking the
  /// output tiles in the grid's order; its producer runs on into the next tile's stages while
  /// the consumers store the last tile's results.
  bool persistent = false;
  /// Tensor cores: the tile order of the grid, groups of this many rows of tiles walked column
  /// by column (passes/lower/gpu/GemmGrid.h), so that a wave of blocks shares its operands in
  /// L2; 1 walks the tiles row by row.
  int groupM = 1;

  bool tensorCores() const { return warpM > 0; }
  bool operator==(const GpuMatMulSchedule &) const = default;
};

/// conv2d as an implicit GEMM over the GPU matmul template.
struct GpuConv2DSchedule {
  GpuMatMulSchedule gemm;
};

} // namespace kiln::lower
