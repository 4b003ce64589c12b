// The CPU GEMM template every contraction lowers through: C[b][i][j] = sum_k A(b,i,k) B(b,k,j)
// as the BLIS loop nest (packed panels, cache blocks, a vector register-tile micro-kernel).
// A and B are element functions, so transposes, batch broadcasting and implicit im2col are
// only different functions read while packing.
#pragma once

#include "codegen/Target.h"
#include "ir/kernel/KernelIR.h"
#include "passes/lower/ElementEmitter.h"
#include "passes/lower/Schedule.h"
#include "support/Error.h"

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace kiln::lower {

/// The flat element offset of (b, i, j) in a buffer.
using GemmOffsetFn = std::function<kir::ExprPtr(kir::ExprPtr b, kir::ExprPtr i, kir::ExprPtr j)>;

/// Stores the finished value of output element (b, i, j): `acc` is the full sum over K in the
/// accumulate dtype. Called a few times at lowering time with symbolic indices; the statement
/// it returns runs exactly once per output element.
using GemmStoreFn =
    std::function<Expected<kir::StmtPtr>(std::span<const kir::ExprPtr> bij, kir::ExprPtr acc)>;

/// An operand whose element function is exactly `load(buffer, offset(b, row, col))`, contiguous
/// along the operand's contiguous axis, where each run of that axis starts at a multiple of
/// `alignment` elements. The GPU template reads such operands in whole vectors; the CPU
/// template ignores it.
struct DenseOperand {
  kir::BufferPtr buffer;
  GemmOffsetFn offset;
  int64_t alignment = 1;
  /// The element function it is: (b, row, col) -> load(buffer, offset(b, row, col)).
  ElementFn element() const;
};

/// An operand read from computed addresses whose consecutive elements along K come in runs:
/// conv2d's implicit im2col, where the channels of one filter tap are adjacent in memory (nhwc)
/// or a channel plane apart (nchw). `address(b, free, k)` gives the element offset of
/// (b, free, k) and whether it lies in the input (nullptr: always; false: padding, which reads
/// as zero). Every run of `run` elements starting at a k that is a multiple of `run` is
/// `stride` apart and equally inside or outside the input; with stride 1 its offset is also a
/// multiple of `run`. The tensor-core template copies such runs (stride 1) in pieces, the CPU
/// template's micro-kernel reads unpacked A a run at a time (GemmTemplate.cpp,
/// segmentedMicroKernel); the other templates use the element function.
struct GatheredOperand {
  kir::BufferPtr buffer;
  std::function<std::pair<kir::ExprPtr, kir::ExprPtr>(kir::ExprPtr b, kir::ExprPtr free,
                                                      kir::ExprPtr k)>
      address;
  int64_t run = 1;
  /// The distance between consecutive elements of a run: 1 (nhwc's adjacent channels), or an
  /// nchw image's channel plane. Only the CPU template reads runs of stride > 1.
  int64_t stride = 1;
  /// 0, or a multiple of `run`: runs of `windowRow` elements starting at multiples of it are
  /// consecutive too (`stride` apart) but may straddle the input's edge; such a run lies
  /// wholly inside when its first and last elements do (nhwc's row of KW taps at unit
  /// dilation, where every tap's channels follow the previous tap's). The CPU micro-kernel
  /// reads a row of taps as one run where the tile is inside, so a convolution with few
  /// channels pays one address and padding test per row of taps instead of per tap.
  int64_t windowRow = 0;
  /// The element function it is: the load at `address`, zero in the padding.
  ElementFn element() const;
};

/// How a B operand that is a weight (a matmul's weight, a convolution's filter) splits into
/// matrices: GEMM batch b multiplies matrix `matrixOf(b)`, and `representative(m)` is a batch
/// index that reads matrix m. The CPU template can pack such a B once for the whole GEMM, in a
/// kernel of its own that runs before the GEMM (GemmLowering::prelude).
struct WeightOperand {
  int64_t matrices = 1;
  std::function<kir::ExprPtr(kir::ExprPtr b)> matrixOf;
  std::function<kir::ExprPtr(kir::ExprPtr matrix)> representative;
};

/// One batched GEMM as the template sees it.
struct GemmProblem {
  int64_t batch = 1, m = 0, n = 0, k = 0;
  /// Set when M is known only at run time (a symbolic batch, docs/dynamic-shapes.md): the rows
  /// the kernel computes, at most `m`, from which the blocks are sized.
  kir::ExprPtr runtimeM;
  /// Set when the batch is known only at run time (one GEMM per image of a symbolic batch): the
  /// batch the kernel computes, at most `batch`.
  kir::ExprPtr runtimeBatch;
  /// Set when K is known only at run time (a weight gradient summing over a symbolic batch):
  /// the K the kernel sums over, at most `k`. The blocks are sized at `k`; kc blocks past the
  /// run's K sum nothing.
  kir::ExprPtr runtimeK;
  /// f32, f64, i32 or i64: packed panels, the registers and partial sums use it.
  DType accumulate = DType::F32;
  ElementFn a; ///< (b, i, k) -> an element of any numeric dtype; cast to `accumulate` when read
  ElementFn b; ///< (b, k, j)
  /// Which axis of each operand is contiguous in memory, so packing reads it innermost.
  bool aContiguousInK = true;
  bool bContiguousInK = false;
  /// Set when the operand is a plain dense load (see DenseOperand).
  std::optional<DenseOperand> aDense, bDense;
  /// Set when A is read in contiguous runs along K from computed addresses (GatheredOperand).
  std::optional<GatheredOperand> aGathered;
  /// Set when B is a weight (the problem's builder says how it splits into matrices).
  std::optional<WeightOperand> bWeight;
  /// CPU: pack B (a bWeight) once, whole, in the prelude, instead of panel by panel inside the
  /// GEMM: when B depends on parameters alone the launch plan keeps the packed copy between
  /// runs, so inference never packs weights again.
  bool prepackB = false;
  /// f32 operands may be multiplied as tf32 (the contraction's allow_tf32).
  bool allowTf32 = false;
  GemmStoreFn storeResult;
  /// Set when the result is the accumulator itself (output dtype == accumulate, no epilogue)
  /// and `plainOffset` is unit-stride in j: full tiles are stored straight from the vector
  /// registers and partial sums over K blocks are kept in the output, needing no workspace.
  kir::BufferPtr plainOutput;
  GemmOffsetFn plainOffset;
  /// The output is contiguous along i, not j (nchw direct convolution): the write-out of a
  /// register tile runs i innermost.
  bool outputContiguousInI = false;
  /// A prefix for the names of loop variables and buffers.
  std::string name = "gemm";
};

/// The kernel body of a lowered GEMM and the workspace buffers it needs (extra kernel
/// parameters after the output, in this order, each of exactly the size given).
struct GemmLowering {
  kir::StmtPtr body;
  std::vector<kir::BufferPtr> workspaces;
  /// Bodies of kernels launched after `body`'s on the same parameters, each with its name
  /// suffix (split-K: "splitk_sum", which adds the partial products and runs the epilogue).
  std::vector<std::pair<std::string, kir::StmtPtr>> followUps;
  /// With prepackB: the body of a kernel launched before `body`'s on the same parameters that
  /// reads B alone and writes workspaces[0]: every kc x nc panel the GEMM reads, packed.
  kir::StmtPtr prelude = nullptr;
};

/// Lowers `problem` with `schedule` (checked with checkGemmSchedule; blocks larger than the
/// problem are clamped to it).
///
/// Partial sums over K blocks: the micro-kernel accumulates one kc block in registers; the
/// first block's tile is stored, later blocks add the stored value back in (a predicated load
/// that reads zero for the first block), so partial sums stay in the accumulate dtype. They
/// live in the output when `plainOutput` is set, else in a batch*m*n workspace, which is only
/// needed when K spans more than one block. The last block runs `storeResult` (the epilogue)
/// once per element.
Expected<GemmLowering> lowerGemm(const GemmProblem &problem, const MatMulSchedule &schedule,
                                 const codegen::CpuTarget &target);

} // namespace kiln::lower
