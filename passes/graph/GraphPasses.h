// Factories of the graph passes in passes/graph/, one pass per file. The pass
// manager's registry (PassManager.cpp) names them; tests and pipelines that
// need a pass with options construct it here.
#pragma once

#include "ir/graph/OpTable.h"
#include "passes/PassManager.h"

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

namespace kiln::passes {

/// Constant folding leaves a node alone when its result has more elements than
/// this: a folded constant stores one double per element in the IR text.
inline constexpr int64_t kMaxFoldedElements = int64_t{1} << 16;
/// ...or when an operand has more elements than this, which bounds the work
/// (a matmul of two large splats) done at compile time.
inline constexpr int64_t kMaxFoldOperandElements = int64_t{1} << 20;

/// "dce": erases nodes whose results are neither used nor outputs.
std::unique_ptr<Pass> createDeadCodeEliminationPass();
/// "cse": merges nodes that compute the same thing.
std::unique_ptr<Pass> createCommonSubexpressionEliminationPass();
/// "fold": evaluates nodes whose operands are all constants.
std::unique_ptr<Pass> createConstantFoldingPass();
/// "simplify": local algebraic identities, to a fixed point.
std::unique_ptr<Pass> createAlgebraicSimplifyPass();
/// "decompose": rewrites composite ops into primitives. With `onlyOps` empty
/// every composite op is decomposed; otherwise only those kinds.
std::unique_ptr<Pass> createDecomposePass(std::vector<ir::OpKind> onlyOps = {});
/// A decompose pass limited to the named ops; an error names an unknown op or
/// one that has no decomposition.
Expected<std::unique_ptr<Pass>> createDecomposePass(std::span<const std::string_view> opNames);

} // namespace kiln::passes
