// GEMM schedules: which MatMulSchedules are legal for a problem, the heuristic default, and
// the space the autotuner searches. Shared by matmul and conv2d (both lower through the GEMM
// template).
#pragma once

#include "codegen/Target.h"
#include "passes/lower/Schedule.h"
#include "support/DType.h"
#include "support/Error.h"

#include <cstdint>
#include <vector>

namespace kiln::lower {

/// The sizes of a batched GEMM, all that schedule choice looks at.
struct GemmShape {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  DType accumulate = DType::F32;
  /// What the tensor-core kernels look at (GPU): the operands' element dtype, whether f32
  /// operands may run as tf32, and whether both operands are read in contiguous runs (matmul's
  /// dense operands; nhwc conv2d, whose im2col rows hold each filter tap's channels together;
  /// not nchw conv2d). For such operands: which axis of each is contiguous and how many
  /// elements every contiguous run holds (a vector load never straddles two runs).
  DType operandDtype = DType::F32;
  bool allowTf32 = false;
  bool denseOperands = false;
  bool aContiguousInK = true, bContiguousInK = false;
  int64_t aRun = 0, bRun = 0;
  /// Both operands are plain strided tensors a tensor map can describe (bulk tensor copies).
  bool tmaOperands = false;
  /// CPU: the micro-kernel reads A in place, unpacked (a Direct convolution's input): each row
  /// of the register tile is a stream of its own behind an address and a padding test.
  bool aInPlace = false;

  /// Multiply-adds of the whole problem.
  double work() const { return double(batch) * double(m) * double(n) * double(k); }
};

/// The largest per-task buffer (packed A block, or the B panel of Parallel::Outer) a schedule
/// may ask for. The host backend puts small ones on the stack and larger ones in heap scratch
/// taken once per call of the outlined parallel body; this bounds the memory per thread.
inline constexpr int64_t kMaxTaskBufferBytes = 16 << 20;

/// SIMD registers of the target's vector ISA (32 with AVX-512, else 16).
int vectorRegisters(const codegen::CpuTarget &target);

/// Lanes of `accumulate` in one target vector register.
int accumulateLanes(DType accumulate, const codegen::CpuTarget &target);

/// Whether `schedule` is legal for `shape` (block sizes are clamped to the problem first, so a
/// block larger than the problem is fine). The error names the field and what it must be.
Expected<void> checkGemmSchedule(const MatMulSchedule &schedule, const GemmShape &shape);

/// A good schedule without running anything: a register tile that fills the vector registers
/// and wastes little at the edges, kc so a kc x nr B strip stays in L1, mc so the packed A
/// block stays in L2, nc so the B panel stays in L3 (a core's share of it for per-task
/// packing), and the parallel mode that gives every core work.
MatMulSchedule defaultGemmSchedule(const GemmShape &shape, const codegen::CpuTarget &target);

/// Legal variants around the default: register tiles, kc/mc/nc, A packing (when
/// `allowUnpackedA`; B is always packed), parallel modes. The default comes first; no
/// duplicates after clamping to the problem.
std::vector<MatMulSchedule>
gemmScheduleSpace(const GemmShape &shape, const codegen::CpuTarget &target, bool allowUnpackedA);

/// `schedule` with its blocks clamped to the problem (what the lowering actually uses).
MatMulSchedule clampGemmSchedule(const MatMulSchedule &schedule, const GemmShape &shape);

/// How many column chunks each nc panel is split into in Parallel::Inner mode, so that
/// numRowBlocks * chunks tasks keep `cores` threads evenly busy.
int64_t innerColumnChunks(int64_t numRowBlocks, int64_t stripsPerPanel, int cores);

} // namespace kiln::lower
