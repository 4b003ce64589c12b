// The GPU instructions kiln emits, described once: for each, the architecture it needs and the
// inline PTX both GPU backends write for it. The CUDA C emitter prints that PTX as an asm
// statement; the NVPTX emitter hands it to LLVM as inline asm, or calls LLVM's intrinsic where
// LLVM has one (mma.sync on f16, bf16 and tf32, ldmatrix, cp.async), so that LLVM sees the
// instruction it schedules. Adding an instruction: its function here, then each emitter passes
// its operands (docs/contributing.md).
#pragma once

#include "codegen/Target.h"
#include "ir/kernel/KernelIR.h"
#include "support/Error.h"

#include <string>
#include <string_view>
#include <vector>

namespace kiln::codegen {

/// One GPU instruction as inline PTX. `text` names operand i as %i; `constraints[i]` is its
/// constraint as GCC-style asm writes it: outputs first ("=f", "=r"; "+f" read and written),
/// then inputs ("r" 32-bit, "l" 64-bit, "f" f32).
struct InlinePtx {
  std::string mnemonic; ///< the instruction, for errors: "cp.async.cg.shared.global"
  int minSm = 80;
  bool archSpecific = false; ///< only on the "a" variant of minSm (sm_90a)
  bool clobbersMemory = true; ///< reads or writes memory the compiler must not move across it
  std::string text;
  std::vector<std::string> constraints;

  /// How many operands are outputs (the constraints that begin with '=' or '+').
  int outputCount() const;
};

/// Unsupported, naming `what`, the instruction and the target, when `target` lacks it.
Expected<void> requireInstruction(const GpuTarget &target, const InlinePtx &instruction,
                                  std::string_view what);

/// mma.sync.aligned: d (f32 outputs), a and b (32-bit words of packed operands, or f32 for
/// tf32), c (f32 inputs).
InlinePtx mmaSync(kir::MmaKind kind);
/// ldmatrix.sync.aligned.m8n8: one 32-bit output per matrix, then the row's shared address.
InlinePtx ldMatrix(int matrices, bool transpose);
/// cp.async of `bytes` from a global to a shared address; with `sourceBytes` a third operand
/// says how many bytes to read (fewer fill zeros).
InlinePtx cpAsync(int bytes, bool sourceBytes);
InlinePtx cpAsyncCommit();
InlinePtx cpAsyncWait(int pendingGroups);
/// wgmma.mma_async: `n` / 2 f32 accumulators (read and written when `accumulate`), the
/// descriptors of a and b, and a flag (0: overwrite, 1: accumulate).
InlinePtx wgmmaMmaAsync(kir::WgmmaKind kind, int n, bool aMnMajor, bool bMnMajor, bool accumulate);
/// The ordering statements around wgmma (kir::WgmmaSyncOp).
InlinePtx wgmmaSync(kir::WgmmaSyncOp op, int pendingGroups);
/// An mbarrier operation on the barrier at a shared address (and its count or parity).
InlinePtx mbarrier(kir::MbarrierOp op);
/// cp.async.bulk.tensor (tile mode) of a `rank`-dimensional box: the destination's shared
/// address, the tensor map's generic address, the coordinates, the mbarrier's shared address.
InlinePtx bulkTensorLoad(int rank);

} // namespace kiln::codegen
