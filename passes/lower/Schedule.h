// Schedules: plain data saying how a fusion group becomes a kernel. Each group
// kind has a heuristic default and an enumerable space (the autotuner searches
// it) on each target (lower::defaultSchedule, scheduleSpace in Lower.h);
// lowering is (group, schedule, target) -> kernel IR.
#pragma once

#include "codegen/Target.h"
#include "passes/lower/GpuSchedule.h"
#include "passes/graph/Fusion.h"
#include "support/Error.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace kiln::lower {

/// Elementwise chains, broadcasts and movement: the outer loops (collapsed) run
/// in parallel, the innermost is vectorized.
struct PointwiseSchedule {
  int vectorWidth = 8;          ///< elements per vector iteration of the innermost loop
  int64_t minParallelWork = 1 << 15; ///< below this many elements the kernel runs serially
};

/// A transpose-like group (the innermost output axis is strided in the input):
/// square tiles so both sides stay in cache.
struct TransposeSchedule {
  int64_t tile = 32;
  int64_t minParallelWork = 1 << 15; ///< below this many elements the kernel runs serially
};

/// reduce_*, argmax/argmin: parallel over kept elements, accumulate in
/// registers; a contiguous inner reduction uses `vectorWidth` partial sums.
struct ReductionSchedule {
  int vectorWidth = 8;
  int64_t minParallelWork = 1 << 15;
};

/// softmax, log_softmax, layer_norm: one row per iteration of a parallel loop.
struct RowNormSchedule {
  int vectorWidth = 8;
  int64_t minParallelWork = 1 << 15;
};

struct PoolingSchedule {
  int vectorWidth = 8;
  int64_t minParallelWork = 1 << 15;
};

/// A cache-blocked GEMM (the BLIS loop nest): B packed into kc x nc panels, A
/// packed into mc x kc blocks, an mr x nr register-tile micro-kernel with
/// explicit vectors of `vectorWidth` lanes along n.
struct MatMulSchedule {
  /// How the loop nest uses the thread pool.
  enum class Parallel {
    Serial, ///< one thread: small problems, where a fork-join costs more than it saves
    Outer,  ///< parallel over (batch, nc column panel) tasks, each packing into its own buffers
    Inner,  ///< serial over batch, nc and kc; the B panel is packed in parallel into a shared
            ///< workspace, then (mc row block x column chunk) tiles run in parallel
  };
  int64_t mc = 96, nc = 512, kc = 256; ///< cache blocks
  int64_t mr = 6, nr = 16;             ///< register tile (nr a multiple of vectorWidth)
  int vectorWidth = 8;                 ///< lanes of the accumulate dtype per vector
  bool packA = true, packB = true;     ///< packB must be true: the micro-kernel reads B vectors from a packed panel
  Parallel parallel = Parallel::Inner;
  bool operator==(const MatMulSchedule &) const = default;
};

struct Conv2DSchedule {
  /// Im2col: implicit GEMM, output channels along M (nchw) or N (nhwc), the input packed as
  /// im2col panels on the fly. Direct: output channels along the vector (N) axis, output pixels
  /// along M, the input read in place by the micro-kernel (no A packing): best for few input
  /// channels, where packing costs as much as the arithmetic.
  enum class Algorithm { Im2col, Direct };
  Algorithm algorithm = Algorithm::Im2col;
  MatMulSchedule gemm;  ///< blocking and register tile of either algorithm
  int64_t ocBlock = 16; ///< for Direct: output channels per register tile (the GEMM's nr; gemm.nr is ignored)
  bool operator==(const Conv2DSchedule &) const = default;
};

/// Kinds with nothing to choose (constants, aliases) use NoSchedule.
struct NoSchedule {};

/// A CPU or a GPU schedule (passes/lower/GpuSchedule.h); each target lowers
/// only its own kinds.
using Schedule =
    std::variant<NoSchedule, PointwiseSchedule, TransposeSchedule, ReductionSchedule,
                 RowNormSchedule, PoolingSchedule, MatMulSchedule, Conv2DSchedule,
                 GpuPointwiseSchedule, GpuTransposeSchedule, GpuReductionSchedule,
                 GpuRowNormSchedule, GpuPoolingSchedule, GpuMatMulSchedule, GpuConv2DSchedule>;

/// One line, deterministic, every field:
/// "matmul mc=96 nc=512 kc=256 mr=6 nr=16 vw=8 pack=ab par=inner".
std::string scheduleStr(const Schedule &schedule);

/// "serial", "outer", "inner": MatMulSchedule::Parallel as scheduleStr writes it.
std::string_view gemmParallelName(MatMulSchedule::Parallel parallel);

/// The inverse of scheduleStr: every field it prints, back into a schedule.
/// Malformed text is an error quoting it and naming the bad field.
Expected<Schedule> parseSchedule(std::string_view text);

} // namespace kiln::lower
