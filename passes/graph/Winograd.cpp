// "winograd": f32 NCHW conv2d with a 3x3 filter, stride 1, dilation 1, one group
// and many channels becomes Winograd F(m x m, 3 x 3), built from existing ops.
//
// Why: a direct or im2col convolution makes 9 multiplies per output and input
// channel, and the CPU's deep 3x3 layers already run it near the FMA peak.
// Winograd makes (m+2)^2 / m^2 per output (4 for m = 2, 2.25 for m = 4) as one
// batched matmul over the alpha x alpha transform points (alpha = m + 2):
//
//   U[ab, o, c]  = sum_ij (G ⊗ G)[ab, ij] w[o, c, i, j]       matmul with a constant
//   V[ab, c, t]  = sum_ij (BT ⊗ BT)[ab, ij] d_t[ij]         one pointwise kernel
//   M[ab, o, t]  = U[ab] @ V[ab]                             the batched matmul
//   y[n, o, h, w] = sum_ab (AT ⊗ AT)[pq, ab] M[ab, o, t]      one pointwise kernel
//
// t runs over every image's tiles, d_t is tile t's alpha x alpha input patch
// (padding reads zero), and the output pixel (h, w) of image n is point
// (p, q) = (h mod m, w mod m) of its tile (n, h / m, w / m).
// Each transform is a sum of a few terms (the nonzeros of the Kronecker
// product), each term a gather of the tile's column and a take_along_axis of
// its row, scaled by a coefficient (zero where the patch leaves the image).
// Index and coefficient tables are constants, so the kernels compute no
// division and read each operand element with one load; the output transform
// ends where the convolution did, so its bias, activation and residual add
// fuse into it. Every rewrite computes the same values up to rounding; the
// choice of layers (channels enough that the batched matmul dominates, pixels
// enough to share the per-run filter transform) is measured on the CPU
// (docs/winograd.md).
#include "passes/graph/GraphPasses.h"

#include "ir/graph/Graph.h"
#include "passes/graph/ReplaceNodes.h"

#include <algorithm>
#include <array>

namespace kiln::passes {

namespace {

using ir::Node;
using ir::OpKind;
using ir::Shape;
using ir::Value;

/// The transform matrices of F(m x m, 3 x 3) (Lavin and Gray, "Fast Algorithms
/// for Convolutional Neural Networks", 2016), row-major.
struct WinogradMatrices {
  int m = 0;
  int alpha = 0;
  std::vector<double> inputT;  ///< BT, alpha x alpha
  std::vector<double> filter;  ///< G, alpha x 3
  std::vector<double> outputT; ///< AT, m x alpha
};

const WinogradMatrices &matricesFor(int outputTile) {
  static const WinogradMatrices f2 = {
      2,
      4,
      {1, 0, -1, 0, 0, 1, 1, 0, 0, -1, 1, 0, 0, 1, 0, -1},
      {1, 0, 0, 0.5, 0.5, 0.5, 0.5, -0.5, 0.5, 0, 0, 1},
      {1, 1, 1, 0, 0, 1, -1, -1},
  };
  static const WinogradMatrices f4 = {
      4,
      6,
      {4, 0, -5, 0, 1, 0, 0, -4, -4, 1, 1, 0, 0, 4, -4, -1, 1, 0,
       0, -2, -1, 2, 1, 0, 0, 2, -1, -2, 1, 0, 0, 4, 0, -5, 0, 1},
      {1.0 / 4, 0, 0, -1.0 / 6, -1.0 / 6, -1.0 / 6, -1.0 / 6, 1.0 / 6, -1.0 / 6, 1.0 / 24,
       1.0 / 12, 1.0 / 6, 1.0 / 24, -1.0 / 12, 1.0 / 6, 0, 0, 1},
      {1, 1, 1, 1, 1, 0, 0, 1, -1, 2, -2, 0, 0, 1, 1, 4, 4, 0, 0, 1, -1, 8, -8, 1},
  };
  KILN_CHECK(outputTile == 2 || outputTile == 4, "Winograd output tiles are 2 or 4");
  return outputTile == 2 ? f2 : f4;
}

/// One nonzero of a transform matrix's row: its column and value.
struct Term {
  int64_t col = 0;
  double value = 0.0;
};

/// The nonzeros of each row of X (rows x cols), and the most of any row. A
/// point of X ⊗ X combines a row's nonzeros with another's, so each
/// transform is a sum of (most)^2 terms, each a product of a row and a
/// column factor: the tables stay one-dimensional per axis.
struct RowTerms {
  std::vector<std::vector<Term>> rows;
  int64_t most = 0;
};

RowTerms rowTerms(const std::vector<double> &x, int64_t rows, int64_t cols) {
  RowTerms terms;
  terms.rows.resize(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c)
      if (double value = x[static_cast<size_t>(r * cols + c)]; value != 0.0)
        terms.rows[static_cast<size_t>(r)].push_back({c, value});
    terms.most = std::max(terms.most, static_cast<int64_t>(terms.rows[static_cast<size_t>(r)].size()));
  }
  return terms;
}

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Adds nodes at the convolution's location, so an error still names the user's line.
class Builder {
public:
  Builder(ir::Graph &graph, const Node &conv) : graph_(graph), at_(conv.location()) {}

  Expected<Value *> op(OpKind kind, std::vector<Value *> operands, ir::AttrMap attrs = {}) {
    return graph_.addNode(kind, std::move(operands), std::move(attrs), at_);
  }
  Expected<Value *> constant(DType dtype, Shape shape, std::vector<double> values) {
    return op(OpKind::Constant, {},
              {{"dtype", dtype}, {"shape", std::move(shape)}, {"value", std::move(values)}});
  }
  Expected<Value *> reshape(Value *x, Shape shape) {
    return op(OpKind::Reshape, {x}, {{"shape", std::move(shape)}});
  }
  /// Row `k` of a table [K, rest...], as a tensor of shape `shape`.
  Expected<Value *> row(Value *table, int64_t k, Shape shape) {
    const Shape &full = table->type().shape;
    std::vector<int64_t> starts(full.size(), 0), stops(full), steps(full.size(), 1);
    starts[0] = k;
    stops[0] = k + 1;
    KILN_TRY(Value * slice, op(OpKind::Slice, {table},
                               {{"starts", starts}, {"stops", stops}, {"steps", steps}}));
    return reshape(slice, std::move(shape));
  }
  /// The sum of `terms` as a balanced tree: shallower kernels, rounding spread evenly.
  Expected<Value *> sum(std::vector<Value *> terms) {
    while (terms.size() > 1) {
      std::vector<Value *> next;
      for (size_t i = 0; i + 1 < terms.size(); i += 2) {
        KILN_TRY(Value * pair, op(OpKind::Add, {terms[i], terms[i + 1]}));
        next.push_back(pair);
      }
      if (terms.size() % 2 == 1)
        next.push_back(terms.back());
      terms = std::move(next);
    }
    return terms.front();
  }

private:
  ir::Graph &graph_;
  Location at_;
};

class WinogradConv final : public Pass {
public:
  explicit WinogradConv(WinogradOptions options) : options_(options) {}

  std::string_view name() const override { return "winograd"; }
  std::string_view description() const override {
    return "runs f32 3x3 stride-1 convolutions with many channels as Winograd F(m x m, 3 x 3)";
  }

  Expected<bool> run(ir::Graph &graph) override {
    const WinogradMatrices &matrices = matricesFor(options_.outputTile);
    return replaceNodes(graph, name(), [&](Node &node) -> Expected<Value *> {
      if (!winogradApplies(node, options_))
        return nullptr;
      return rewrite(graph, node, matrices);
    });
  }

private:
  static Expected<Value *> rewrite(ir::Graph &graph, const Node &conv,
                                   const WinogradMatrices &wm) {
    Builder b(graph, conv);
    Value *x = conv.operand(0), *w = conv.operand(1);
    const Shape &in = x->type().shape;
    const int64_t n = in[0], c = in[1], h = in[2], wIn = in[3];
    const int64_t o = w->type().shape[0];
    const Shape &out = conv.type().shape;
    const int64_t hOut = out[2], wOut = out[3];
    const std::vector<int64_t> &padding = ir::getInts(conv.attrs(), "padding");
    const int64_t m = wm.m, alpha = wm.alpha, points = alpha * alpha;
    const int64_t tilesH = ceilDiv(hOut, m), tilesW = ceilDiv(wOut, m), tiles = tilesH * tilesW;
    const DType f32 = DType::F32;

    // U [points, O, C]: the filter transform, one small matmul per run (a
    // constant filter folds).
    std::vector<double> filterKron(static_cast<size_t>(points * 9));
    for (int64_t a = 0; a < alpha; ++a)
      for (int64_t bb = 0; bb < alpha; ++bb)
        for (int64_t i = 0; i < 3; ++i)
          for (int64_t j = 0; j < 3; ++j)
            filterKron[static_cast<size_t>((a * alpha + bb) * 9 + i * 3 + j)] =
                wm.filter[static_cast<size_t>(a * 3 + i)] * wm.filter[static_cast<size_t>(bb * 3 + j)];
    KILN_TRY(Value * gg, b.constant(f32, {points, 9}, std::move(filterKron)));
    KILN_TRY(Value * taps, b.reshape(w, {o * c, 9}));
    KILN_TRY(Value * u, b.op(OpKind::MatMul, {gg, taps}, {{"transpose_b", true}}));
    KILN_TRY(Value * u3, b.reshape(u, {points, o, c}));

    // V [points, C, N tiles]: point (a, b) of tile (th, tw) sums, over the
    // nonzeros i of BT's row a and j of its row b, BT[a, i] BT[b, j] times the
    // image at row m th + i - top and column m tw + j - left (the factors are 0
    // outside the image, and the clamped indices stay inside it).
    const RowTerms inTerms = rowTerms(wm.inputT, alpha, alpha);
    const int64_t inK = inTerms.most;
    std::vector<double> rowIdx(static_cast<size_t>(inK * points * tilesH), 0.0);
    std::vector<double> rowCoef(rowIdx.size(), 0.0);
    std::vector<double> colIdx(static_cast<size_t>(inK * points * tilesW), 0.0);
    std::vector<double> colCoef(colIdx.size(), 0.0);
    // One axis's table: for term k of transform point `ab` along this axis (row `which` of
    // B^T), the clamped source index and its coefficient (0 where the tile reads padding).
    auto fillAxis = [&](int64_t which, int64_t k, int64_t ab, int64_t tiles, int64_t pad,
                        int64_t extent, std::vector<double> &idx, std::vector<double> &coef) {
      const auto &list = inTerms.rows[static_cast<size_t>(which)];
      if (k >= static_cast<int64_t>(list.size()))
        return;
      for (int64_t t = 0; t < tiles; ++t) {
        int64_t source = t * m + list[static_cast<size_t>(k)].col - pad;
        size_t at = static_cast<size_t>((k * points + ab) * tiles + t);
        idx[at] = static_cast<double>(std::clamp<int64_t>(source, 0, extent - 1));
        coef[at] = source >= 0 && source < extent ? list[static_cast<size_t>(k)].value : 0.0;
      }
    };
    for (int64_t k = 0; k < inK; ++k)
      for (int64_t a = 0; a < alpha; ++a)
        for (int64_t bb = 0; bb < alpha; ++bb) {
          fillAxis(a, k, a * alpha + bb, tilesH, padding[0], h, rowIdx, rowCoef);
          fillAxis(bb, k, a * alpha + bb, tilesW, padding[2], wIn, colIdx, colCoef);
        }
    KILN_TRY(Value * rowIdxTable, b.constant(DType::I32, {inK, points, tilesH, 1}, std::move(rowIdx)));
    KILN_TRY(Value * rowCoefTable, b.constant(f32, {inK, points, tilesH, 1}, std::move(rowCoef)));
    KILN_TRY(Value * colIdxTable, b.constant(DType::I32, {inK, points, 1, tilesW}, std::move(colIdx)));
    KILN_TRY(Value * colCoefTable, b.constant(f32, {inK, points, 1, tilesW}, std::move(colCoef)));
    const Shape tileGrid = {points, tilesH, tilesW};
    std::vector<Value *> inputTerms;
    for (int64_t kj = 0; kj < inK; ++kj) {
      KILN_TRY(Value * col, b.row(colIdxTable, kj, {points, 1, tilesW}));
      KILN_TRY(Value * colFull, b.op(OpKind::BroadcastTo, {col}, {{"shape", tileGrid}}));
      // [N, C, H, points, tilesH, tilesW]: every image row at the term's columns...
      KILN_TRY(Value * atCols, b.op(OpKind::Gather, {x, colFull}, {{"axis", int64_t{3}}}));
      KILN_TRY(Value * colFactor, b.row(colCoefTable, kj, {points, 1, tilesW}));
      for (int64_t ki = 0; ki < inK; ++ki) {
        KILN_TRY(Value * row, b.row(rowIdxTable, ki, {1, 1, 1, points, tilesH, 1}));
        KILN_TRY(Value * rowFull, b.op(OpKind::BroadcastTo, {row},
                                       {{"shape", Shape{n, c, 1, points, tilesH, tilesW}}}));
        // ...and of those, the term's row: [N, C, 1, points, tilesH, tilesW].
        KILN_TRY(Value * patch,
                 b.op(OpKind::TakeAlongAxis, {atCols, rowFull}, {{"axis", int64_t{2}}}));
        KILN_TRY(Value * rowFactor, b.row(rowCoefTable, ki, {points, tilesH, 1}));
        KILN_TRY(Value * factor, b.op(OpKind::Mul, {rowFactor, colFactor}));
        KILN_TRY(Value * term, b.op(OpKind::Mul, {patch, factor}));
        inputTerms.push_back(term);
      }
    }
    KILN_TRY(Value * vSum, b.sum(std::move(inputTerms)));
    KILN_TRY(Value * vGrid, b.reshape(vSum, {n, c, points, tilesH, tilesW}));
    KILN_TRY(Value * vTiles, b.op(OpKind::Transpose, {vGrid},
                                  {{"perm", std::vector<int64_t>{2, 1, 0, 3, 4}}}));
    // An alias: the transform's kernel writes the tile grid, no index division.
    KILN_TRY(Value * v, b.reshape(vTiles, {points, c, n * tiles}));

    // M [points, O, N tiles]: the batched matmul, every image's tiles side by side (wide
    // panels for the GEMM at any batch).
    KILN_TRY(Value * product, b.op(OpKind::MatMul, {u3, v}));
    KILN_TRY(Value * productGrid, b.reshape(product, {points, o, n, tiles}));

    // y [N, O, H', W']: output pixel (h, w), point (p, q) = (h mod m, w mod m)
    // of tile (h / m, w / m), sums over the nonzeros a of AT's row p and b of
    // its row q AT[p, a] AT[q, b] M[a alpha + b, tile].
    const RowTerms outTerms = rowTerms(wm.outputT, m, alpha);
    const int64_t outK = outTerms.most;
    std::vector<double> tileRow(static_cast<size_t>(hOut)), tileCol(static_cast<size_t>(wOut));
    for (int64_t y = 0; y < hOut; ++y)
      tileRow[static_cast<size_t>(y)] = static_cast<double>((y / m) * tilesW);
    for (int64_t xx = 0; xx < wOut; ++xx)
      tileCol[static_cast<size_t>(xx)] = static_cast<double>(xx / m);
    std::vector<double> pointRow(static_cast<size_t>(outK * hOut), 0.0), outRowCoef(pointRow.size(), 0.0);
    std::vector<double> pointCol(static_cast<size_t>(outK * wOut), 0.0), outColCoef(pointCol.size(), 0.0);
    for (int64_t k = 0; k < outK; ++k) {
      for (int64_t y = 0; y < hOut; ++y)
        if (const auto &list = outTerms.rows[static_cast<size_t>(y % m)];
            k < static_cast<int64_t>(list.size())) {
          pointRow[static_cast<size_t>(k * hOut + y)] =
              static_cast<double>(list[static_cast<size_t>(k)].col * alpha);
          outRowCoef[static_cast<size_t>(k * hOut + y)] = list[static_cast<size_t>(k)].value;
        }
      for (int64_t xx = 0; xx < wOut; ++xx)
        if (const auto &list = outTerms.rows[static_cast<size_t>(xx % m)];
            k < static_cast<int64_t>(list.size())) {
          pointCol[static_cast<size_t>(k * wOut + xx)] =
              static_cast<double>(list[static_cast<size_t>(k)].col);
          outColCoef[static_cast<size_t>(k * wOut + xx)] = list[static_cast<size_t>(k)].value;
        }
    }
    KILN_TRY(Value * tileRowTable, b.constant(DType::I32, {hOut, 1}, std::move(tileRow)));
    KILN_TRY(Value * tileColTable, b.constant(DType::I32, {1, wOut}, std::move(tileCol)));
    KILN_TRY(Value * pointRowTable, b.constant(DType::I32, {outK, hOut, 1}, std::move(pointRow)));
    KILN_TRY(Value * rowCoefOut, b.constant(f32, {outK, hOut, 1}, std::move(outRowCoef)));
    KILN_TRY(Value * pointColTable, b.constant(DType::I32, {outK, 1, wOut}, std::move(pointCol)));
    KILN_TRY(Value * colCoefOut, b.constant(f32, {outK, 1, wOut}, std::move(outColCoef)));
    KILN_TRY(Value * tileOf, b.op(OpKind::Add, {tileRowTable, tileColTable}));
    // [points, O, N, H', W']: every point of each pixel's tile.
    KILN_TRY(Value * atTiles, b.op(OpKind::Gather, {productGrid, tileOf}, {{"axis", int64_t{3}}}));
    std::vector<Value *> outputTerms;
    for (int64_t ka = 0; ka < outK; ++ka) {
      KILN_TRY(Value * pointA, b.row(pointRowTable, ka, {hOut, 1}));
      KILN_TRY(Value * factorA, b.row(rowCoefOut, ka, {hOut, 1}));
      for (int64_t kb = 0; kb < outK; ++kb) {
        KILN_TRY(Value * pointB, b.row(pointColTable, kb, {1, wOut}));
        KILN_TRY(Value * point, b.op(OpKind::Add, {pointA, pointB}));
        KILN_TRY(Value * point5, b.reshape(point, {1, 1, 1, hOut, wOut}));
        KILN_TRY(Value * pointFull, b.op(OpKind::BroadcastTo, {point5},
                                         {{"shape", Shape{1, o, n, hOut, wOut}}}));
        KILN_TRY(Value * picked,
                 b.op(OpKind::TakeAlongAxis, {atTiles, pointFull}, {{"axis", int64_t{0}}}));
        KILN_TRY(Value * factorB, b.row(colCoefOut, kb, {1, wOut}));
        KILN_TRY(Value * factor, b.op(OpKind::Mul, {factorA, factorB}));
        KILN_TRY(Value * term, b.op(OpKind::Mul, {picked, factor}));
        outputTerms.push_back(term);
      }
    }
    KILN_TRY(Value * ySum, b.sum(std::move(outputTerms)));
    KILN_TRY(Value * yByChannel, b.reshape(ySum, {o, n, hOut, wOut}));
    KILN_TRY(Value * y, b.op(OpKind::Transpose, {yByChannel},
                             {{"perm", std::vector<int64_t>{1, 0, 2, 3}}}));
    KILN_CHECK(y->type() == conv.type(), "the Winograd convolution has the convolution's type");
    return y;
  }

  WinogradOptions options_;
};

} // namespace

bool winogradApplies(const ir::Node &node, const WinogradOptions &options) {
  if (node.kind() != OpKind::Conv2D)
    return false;
  const ir::AttrMap &attrs = node.attrs();
  const ir::TensorType &x = node.operand(0)->type();
  const ir::TensorType &w = node.operand(1)->type();
  const std::vector<int64_t> one = {1, 1};
  if (ir::getString(attrs, "layout") != "nchw" || ir::getInt(attrs, "groups") != 1 ||
      ir::getInts(attrs, "stride") != one || ir::getInts(attrs, "dilation") != one ||
      ir::getBool(attrs, "allow_tf32") || ir::getType(attrs, "accumulate") != DType::F32)
    return false;
  if (x.dtype != DType::F32 || w.dtype != DType::F32 || node.type().dtype != DType::F32 ||
      x.rank() != 4 || w.rank() != 4 || w.shape[2] != 3 || w.shape[3] != 3)
    return false;
  const Shape &out = node.type().shape;
  const int64_t c = x.shape[1], o = w.shape[0];
  return 2 * c * o >= options.minChannelMean * (c + o) &&
         out[0] * out[2] * out[3] >= options.minOutputPixels && out[2] >= options.outputTile &&
         out[3] >= options.outputTile;
}

std::unique_ptr<Pass> createWinogradPass(WinogradOptions options) {
  KILN_CHECK(options.outputTile == 2 || options.outputTile == 4,
             "Winograd output tiles are 2 or 4");
  return std::make_unique<WinogradConv>(options);
}

} // namespace kiln::passes
