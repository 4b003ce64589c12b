// Matmul as element functions of the GEMM template: A(b, i, k) and B(b, k, j) read the
// operands through their (possibly broadcast) batch strides and transposes.
#include "passes/lower/LowerMatMul.h"

#include "ir/kernel/Builder.h"
#include "passes/lower/ContractionKernel.h"
#include "passes/lower/GemmTemplate.h"
#include "passes/lower/RuntimeSizes.h"

#include <fmt/format.h>

#include <tuple>

namespace kiln::lower {
namespace {

using namespace kir;
using ir::Shape;

/// The geometry of one matmul node.
struct MatMulLayout {
  Shape batchShape;     ///< the result's batch dims
  Shape aBatch, bBatch; ///< each operand's batch dims (broadcast to batchShape)
  int64_t batch = 1, m = 0, n = 0, k = 0;
  bool transposeA = false, transposeB = false;
  /// b is one matrix for every batch element and a is [batch..., M, K]: one GEMM of batch*M rows.
  bool foldBatch = false;
  DType accumulate = DType::F32;
  DType operandDtype = DType::F32;
  bool allowTf32 = false;

  explicit MatMulLayout(const ir::Node &node) {
    const Shape &a = node.operand(0)->type().shape, &b = node.operand(1)->type().shape;
    const Shape &result = node.type().shape;
    transposeA = ir::getBool(node.attrs(), "transpose_a");
    transposeB = ir::getBool(node.attrs(), "transpose_b");
    accumulate = ir::getType(node.attrs(), "accumulate");
    operandDtype = node.operand(0)->type().dtype;
    allowTf32 = ir::getBool(node.attrs(), "allow_tf32");
    batchShape.assign(result.begin(), result.end() - 2);
    aBatch.assign(a.begin(), a.end() - 2);
    bBatch.assign(b.begin(), b.end() - 2);
    batch = product(batchShape);
    m = result[result.size() - 2];
    n = result.back();
    k = a[a.size() - (transposeA ? 2 : 1)];
    foldBatch = batch > 1 && product(bBatch) == 1 && product(aBatch) == batch && !transposeA;
  }

  GemmShape gemmShape() const {
    GemmShape shape{batch, m, n, k, accumulate};
    if (foldBatch) {
      shape.batch = 1;
      shape.m = batch * m;
    }
    shape.operandDtype = operandDtype;
    shape.allowTf32 = allowTf32;
    shape.denseOperands = true;
    shape.aContiguousInK = !transposeA;
    shape.bContiguousInK = transposeB;
    shape.aRun = transposeA ? m : k;
    shape.bRun = transposeB ? k : n;
    // A tensor map takes rows whose strides are 16-byte multiples, and a batch whose matrices
    // are one apart (or shared by all): batchOffset is then affine in the batch index.
    const int64_t bytes = dtypeByteSize(operandDtype);
    auto affineBatch = [&](const Shape &operand) {
      return foldBatch || product(operand) == 1 || product(operand) == batch;
    };
    shape.tmaOperands = shape.aRun * bytes % 16 == 0 && shape.bRun * bytes % 16 == 0 &&
                        affineBatch(aBatch) && affineBatch(bBatch);
    return shape;
  }
};

/// The element offset of batch element `b`'s matrix in an operand whose batch dims
/// `operandBatch` broadcast to `batchShape`.
ExprPtr batchOffset(const ExprPtr &b, const Shape &batchShape, const Shape &operandBatch,
                    int64_t matrixSize) {
  int64_t count = product(operandBatch);
  if (count == 1)
    return index(0);
  if (count == product(batchShape))
    return mul(b, index(matrixSize));
  std::vector<ExprPtr> idx = delinearize(b, batchShape);
  size_t skip = batchShape.size() - operandBatch.size();
  ExprPtr offset = index(0);
  int64_t stride = matrixSize;
  for (size_t d = operandBatch.size(); d-- > 0;) {
    if (operandBatch[d] != 1)
      offset = add(offset, mul(idx[skip + d], index(stride)));
    stride *= operandBatch[d];
  }
  return offset;
}

} // namespace

GemmShape matMulGemmShape(const ir::Node &matmul) { return MatMulLayout(matmul).gemmShape(); }

GemmProblem matMulGemmProblem(const ir::Node &node, ContractionKernel &kernel) {
  MatMulLayout layout(node);
  BufferPtr aBuffer = kernel.operandBuffer(0), bBuffer = kernel.operandBuffer(1);
  GemmShape shape = layout.gemmShape();
  int64_t m = layout.m, n = layout.n, k = layout.k, gemmM = shape.m;

  GemmProblem problem;
  problem.name = "mm";
  std::tie(problem.batch, problem.m, problem.n, problem.k, problem.accumulate) =
      std::tuple(shape.batch, shape.m, shape.n, shape.k, shape.accumulate);
  problem.aContiguousInK = !layout.transposeA;
  problem.bContiguousInK = layout.transposeB;
  // Offsets of operand elements; every matrix starts at a multiple of its size, so a row of
  // the contiguous axis starts at a multiple of that axis' extent.
  GemmOffsetFn aOffset = [=](ExprPtr b, ExprPtr i, ExprPtr kk) {
    // Folded: i runs over batch*M rows of a contiguous [batch..., M, K] operand.
    ExprPtr base =
        layout.foldBatch ? index(0) : batchOffset(b, layout.batchShape, layout.aBatch, m * k);
    ExprPtr within = layout.transposeA ? add(mul(kk, index(m)), i) : add(mul(i, index(k)), kk);
    return add(base, within);
  };
  GemmOffsetFn bOffset = [=](ExprPtr b, ExprPtr kk, ExprPtr j) {
    ExprPtr base = batchOffset(b, layout.batchShape, layout.bBatch, k * n);
    ExprPtr within = layout.transposeB ? add(mul(j, index(k)), kk) : add(mul(kk, index(n)), j);
    return add(base, within);
  };
  problem.aDense = DenseOperand{aBuffer, aOffset, layout.transposeA ? m : k};
  problem.bDense = DenseOperand{bBuffer, bOffset, layout.transposeB ? k : n};
  problem.a = problem.aDense->element();
  problem.b = problem.bDense->element();
  problem.allowTf32 = layout.allowTf32;
  // B as a weight: one matrix for every batch element (folded or broadcast), or one each.
  int64_t bMatrices = product(layout.bBatch);
  if (bMatrices == 1 || bMatrices == problem.batch)
    problem.bWeight =
        WeightOperand{bMatrices, [bMatrices](ExprPtr b) { return bMatrices == 1 ? index(0) : b; },
                      [](ExprPtr matrix) { return matrix; }};
  // The output is [batch..., M, N] row-major: flat (b*M' + i)*N + j either way.
  GemmOffsetFn outputOffset = [gemmM, n](ExprPtr b, ExprPtr i, ExprPtr j) {
    return add(mul(add(mul(b, index(gemmM)), i), index(n)), j);
  };
  RootIndexFn rootIndex = [layout, m](std::span<const ExprPtr> bij) {
    ExprPtr b = bij[0], i = bij[1];
    if (layout.foldBatch) {
      b = div(bij[1], index(m));
      i = mod(bij[1], index(m));
    }
    std::vector<ExprPtr> idx = delinearize(b, layout.batchShape);
    idx.push_back(i);
    idx.push_back(bij[2]);
    return idx;
  };
  problem.storeResult = kernel.storeResult(rootIndex, outputOffset);
  if (kernel.plainResult(layout.accumulate)) {
    problem.plainOutput = kernel.output();
    problem.plainOffset = outputOffset;
  }
  return problem;
}

Expected<void> setMatMulRuntimeSizes(const ir::Node &node, RuntimeSizes &sizes,
                                     GemmProblem &problem) {
  MatMulLayout layout(node);
  const ir::TensorType &result = node.type();
  const ir::TensorType &a = node.operand(0)->type();
  const int64_t rank = result.rank();
  bool staticMatrices = result.size(rank - 1).isConstant() && result.size(rank - 2).isConstant() &&
                        a.size(layout.transposeA ? rank - 2 : rank - 1).isConstant();
  // A sum over the run's rows (a weight's gradient, K the batch): a result of static sizes.
  const ir::SizeExpr &k = a.size(layout.transposeA ? rank - 2 : rank - 1);
  if (!k.isConstant() && !result.isSymbolic()) {
    problem.runtimeK = sizes(k);
    return {};
  }
  // Folded: every axis but the last is a row axis, and B is one matrix.
  if (!node.operand(1)->type().isSymbolic() && !layout.transposeA &&
      (rank == 2 || layout.foldBatch) && result.size(rank - 1).isConstant()) {
    ExprPtr rows = index(1);
    for (int64_t axis = 0; axis + 1 < rank; ++axis)
      rows = mul(rows, sizes(result.size(axis)));
    problem.runtimeM = rows;
    return {};
  }
  // A batch of matrices (attention's products): the run's count of GEMMs. Each operand's
  // matrix offset is linear in the batch index, or delinearized over the inner batch axes,
  // neither of which the leading axis' extent enters.
  if (rank > 2 && staticMatrices && !layout.foldBatch) {
    ExprPtr batches = index(1);
    for (int64_t axis = 0; axis + 2 < rank; ++axis)
      batches = mul(batches, sizes(result.size(axis)));
    problem.runtimeBatch = batches;
    return {};
  }
  return std::unexpected(unsupportedNode(
      node, "a CPU matmul takes runtime sizes in its rows (M: a 2-D matmul's leading axis, or "
            "the batch of one whose B is shared), in its batch of matrices, or in K alone (a "
            "result of static sizes), not in N (docs/dynamic-shapes.md)"));
}

} // namespace kiln::lower
