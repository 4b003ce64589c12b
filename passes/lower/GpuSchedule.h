// GPU schedules: plain data saying how a fusion group becomes a GPU kernel
// (blocks, threads, tiles, vector widths). Each group kind has a heuristic
// default and an enumerable space for a GpuTarget (passes/lower/gpu/).
#pragma once

#include <cstdint>

namespace kiln::lower {

/// Elementwise chains, broadcasts, movement and gathers: one element (or one
/// vector of `vectorWidth` elements) per thread per step, `elementsPerThread`
/// steps per thread, the grid capped at `maxBlocksPerSm` x SMs with a
/// grid-stride loop beyond.
struct GpuPointwiseSchedule {
  int threadsPerBlock = 256;
  int vectorWidth = 4;       ///< elements per vector access (16 bytes of f32)
  int elementsPerThread = 1; ///< vectors per thread per grid step
  int maxBlocksPerSm = 8;
};

/// A transpose-like group: tile x tile blocks staged through shared memory
/// (padded against bank conflicts), `rowsPerPass` thread rows per block.
struct GpuTransposeSchedule {
  int tile = 32;
  int rowsPerPass = 8;
};

/// reduce_*, argmax/argmin: inner reductions give each row to a warp or a block
/// (warp shuffles, then shared memory across warps); outer reductions give
/// each thread a column.
struct GpuReductionSchedule {
  int threadsPerBlock = 256;
  int rowsPerBlock = 1; ///< > 1: several short rows per block, a warp or less each
  int vectorWidth = 1;
};

/// softmax, log_softmax, layer_norm: one kernel, each row reduced by a warp or
/// a block, several rows per block for short rows.
struct GpuRowNormSchedule {
  int threadsPerBlock = 256;
  int rowsPerBlock = 1;
  int vectorWidth = 1;
};

/// max/avg pooling and global average pooling.
struct GpuPoolingSchedule {
  int threadsPerBlock = 256;
};

/// matmul and batched matmul on CUDA cores: a blockM x blockN output tile per
/// block, K in steps of blockK through shared memory (`stages` buffers: 2 is
/// double buffering), a threadM x threadN register tile per thread, split-K
/// over `splitK` blocks.
struct GpuMatMulSchedule {
  int blockM = 64, blockN = 64, blockK = 16;
  int threadM = 4, threadN = 4;
  int stages = 2;
  int vectorWidth = 4;
  int splitK = 1;
};

/// conv2d as an implicit GEMM over the GPU matmul template.
struct GpuConv2DSchedule {
  GpuMatMulSchedule gemm;
};

} // namespace kiln::lower
