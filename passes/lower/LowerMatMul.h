// The GEMM problem of a matmul (2-D and batched, with broadcast batch dims and transposes),
// which the contraction lowering (LowerContraction.cpp) hands to every target's GEMM template.
#pragma once

#include "codegen/Target.h"
#include "ir/graph/Graph.h"
#include "passes/lower/GemmSchedule.h"
#include "passes/lower/GemmTemplate.h"

namespace kiln::lower {

/// The GEMM a matmul node becomes: batch dims flattened, and folded into M when b is shared
/// by every batch element and a is stored untransposed ([B, M, K] @ [K, N] is one
/// [B*M, K] @ [K, N]), which gives one large GEMM instead of many small ones.
GemmShape matMulGemmShape(const ir::Node &matmul);

class ContractionKernel;
class RuntimeSizes;

/// The GEMM problem of a matmul (sizes of matMulGemmShape, operand element functions, the
/// fused epilogue through `kernel`), shared by the CPU and GPU templates.
GemmProblem matMulGemmProblem(const ir::Node &matmul, ContractionKernel &kernel);

/// A matmul of a symbolic graph: its GEMM's rows at run time (GemmProblem::runtimeM: a 2-D
/// matmul's leading axis, or the batch axes of one folded into M), or its count of GEMMs
/// (GemmProblem::runtimeBatch: a batch of matrices, each of static sizes), or its K
/// (GemmProblem::runtimeK: a result of static sizes summed over the run's rows, a weight's
/// gradient); an error names the matmul whose N is symbolic.
Expected<void> setMatMulRuntimeSizes(const ir::Node &matmul, RuntimeSizes &sizes,
                                     GemmProblem &problem);

} // namespace kiln::lower
