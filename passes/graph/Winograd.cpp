// "winograd": f32 conv2d (NCHW or NHWC) with a 3x3 filter, stride 1, dilation 1, one
// group and many channels becomes Winograd F(m x m, 3 x 3), built from existing ops.
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
// (shown for NCHW; NHWC keeps the channels innermost: V[ab, t, c], M = V U[ab, c, o]).
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

/// Where a layout keeps the convolution's axes: x is [N, C, H, W] (nchw) or [N, H, W, C]
/// (nhwc), the filter [O, C, 3, 3] or [O, 3, 3, C], the output as x.
struct ConvAxes {
  bool nhwc = false;
  int64_t channel() const { return nhwc ? 3 : 1; }
  int64_t height() const { return nhwc ? 1 : 2; }
  int64_t width() const { return nhwc ? 2 : 3; }
};

/// The rewrite of one convolution. Both layouts build the same transforms; they differ in
/// where the channels sit, so that each transform's innermost axis is the one x and y keep
/// contiguous: nchw tiles (V [points, C, N tiles], M = U V), nhwc channels (V [points, N
/// tiles, C], M = V U), where every gather reads a pixel's channels with vector loads.
class WinogradRewrite {
public:
  WinogradRewrite(ir::Graph &graph, const Node &conv, const WinogradMatrices &wm)
      : b_(graph, conv), conv_(conv),
        wm_(wm), axes_{ir::getString(conv.attrs(), "layout") == "nhwc"} {
    const Shape &in = conv.operand(0)->type().shape;
    n_ = in[0];
    c_ = in[axes_.channel()];
    h_ = in[axes_.height()];
    w_ = in[axes_.width()];
    o_ = conv.operand(1)->type().shape[0];
    const Shape &out = conv.type().shape;
    hOut_ = out[axes_.height()];
    wOut_ = out[axes_.width()];
    points_ = wm.alpha * wm.alpha;
    tilesH_ = ceilDiv(hOut_, wm.m);
    tilesW_ = ceilDiv(wOut_, wm.m);
  }

  Expected<Value *> run() {
    KILN_TRY(Value * u, filterTransform());
    KILN_TRY(Value * v, inputTransform());
    // M: the batched matmul over the points, every image's tiles side by side (wide panels
    // for the GEMM at any batch); [points, N, tiles, O] or [points, O, N, tiles].
    const int64_t tiles = tilesH_ * tilesW_;
    if (axes_.nhwc) {
      KILN_TRY(Value * product, b_.op(OpKind::MatMul, {v, u}));
      KILN_TRY(Value * grid, b_.reshape(product, {points_, n_, tiles, o_}));
      return outputTransform(grid);
    }
    KILN_TRY(Value * product, b_.op(OpKind::MatMul, {u, v}));
    KILN_TRY(Value * grid, b_.reshape(product, {points_, o_, n_, tiles}));
    return outputTransform(grid);
  }

private:
  /// U: (G ⊗ G) applied to each filter's 9 taps, one small matmul (a constant filter folds;
  /// a parameter's is kept between runs as a derived value): [points, O, C] as the nchw
  /// product's A, [points, C, O] as the nhwc product's B.
  Expected<Value *> filterTransform() {
    const int64_t alpha = wm_.alpha;
    std::vector<double> filterKron(static_cast<size_t>(points_ * 9));
    for (int64_t a = 0; a < alpha; ++a)
      for (int64_t bb = 0; bb < alpha; ++bb)
        for (int64_t i = 0; i < 3; ++i)
          for (int64_t j = 0; j < 3; ++j)
            filterKron[static_cast<size_t>((a * alpha + bb) * 9 + i * 3 + j)] =
                wm_.filter[static_cast<size_t>(a * 3 + i)] *
                wm_.filter[static_cast<size_t>(bb * 3 + j)];
    KILN_TRY(Value * gg, b_.constant(DType::F32, {points_, 9}, std::move(filterKron)));
    Value *w = conv_.operand(1);
    if (!axes_.nhwc) {
      KILN_TRY(Value * taps, b_.reshape(w, {o_ * c_, 9}));
      KILN_TRY(Value * u, b_.op(OpKind::MatMul, {gg, taps}, {{"transpose_b", true}}));
      return b_.reshape(u, {points_, o_, c_});
    }
    KILN_TRY(Value * byTap, b_.reshape(w, {o_, 9, c_}));
    KILN_TRY(Value * tapsFirst,
             b_.op(OpKind::Transpose, {byTap}, {{"perm", std::vector<int64_t>{1, 2, 0}}}));
    KILN_TRY(Value * taps, b_.reshape(tapsFirst, {9, c_ * o_}));
    KILN_TRY(Value * u, b_.op(OpKind::MatMul, {gg, taps}));
    return b_.reshape(u, {points_, c_, o_});
  }

  /// V: point (a, b) of tile (th, tw) sums, over the nonzeros i of BT's row a and j of its
  /// row b, BT[a, i] BT[b, j] times the image at row m th + i - top and column m tw + j -
  /// left (the factors are 0 outside the image, and the clamped indices stay inside it).
  Expected<Value *> inputTransform() {
    const RowTerms inTerms = rowTerms(wm_.inputT, wm_.alpha, wm_.alpha);
    const int64_t inK = inTerms.most, alpha = wm_.alpha, m = wm_.m, points = points_;
    const std::vector<int64_t> &padding = ir::getInts(conv_.attrs(), "padding");
    std::vector<double> rowIdx(static_cast<size_t>(inK * points * tilesH_), 0.0);
    std::vector<double> rowCoef(rowIdx.size(), 0.0);
    std::vector<double> colIdx(static_cast<size_t>(inK * points * tilesW_), 0.0);
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
          fillAxis(a, k, a * alpha + bb, tilesH_, padding[0], h_, rowIdx, rowCoef);
          fillAxis(bb, k, a * alpha + bb, tilesW_, padding[2], w_, colIdx, colCoef);
        }
    const DType i32 = DType::I32, f32 = DType::F32;
    KILN_TRY(Value * rowIdxTable, b_.constant(i32, {inK, points, tilesH_, 1}, std::move(rowIdx)));
    KILN_TRY(Value * rowCoefTable, b_.constant(f32, {inK, points, tilesH_, 1}, std::move(rowCoef)));
    KILN_TRY(Value * colIdxTable, b_.constant(i32, {inK, points, 1, tilesW_}, std::move(colIdx)));
    KILN_TRY(Value * colCoefTable, b_.constant(f32, {inK, points, 1, tilesW_}, std::move(colCoef)));
    // The gathered patches: [N, C, 1, points, tilesH, tilesW] or [N, 1, points, tilesH,
    // tilesW, C] (the gathered axes replace the width, the row's take the height).
    const Shape tileGrid = {points, tilesH_, tilesW_};
    const Shape patchShape = axes_.nhwc ? Shape{n_, 1, points, tilesH_, tilesW_, c_}
                                        : Shape{n_, c_, 1, points, tilesH_, tilesW_};
    const Shape rowIndexShape =
        axes_.nhwc ? Shape{1, 1, points, tilesH_, 1, 1} : Shape{1, 1, 1, points, tilesH_, 1};
    // The coefficients broadcast over the patch's trailing axes: a channel axis last in nhwc.
    const Shape rowFactorShape =
        axes_.nhwc ? Shape{points, tilesH_, 1, 1} : Shape{points, tilesH_, 1};
    const Shape colFactorShape =
        axes_.nhwc ? Shape{points, 1, tilesW_, 1} : Shape{points, 1, tilesW_};
    Value *x = conv_.operand(0);
    std::vector<Value *> inputTerms;
    for (int64_t kj = 0; kj < inK; ++kj) {
      KILN_TRY(Value * col, b_.row(colIdxTable, kj, {points, 1, tilesW_}));
      KILN_TRY(Value * colFull, b_.op(OpKind::BroadcastTo, {col}, {{"shape", tileGrid}}));
      // Every image row at the term's columns...
      KILN_TRY(Value * atCols, b_.op(OpKind::Gather, {x, colFull}, {{"axis", axes_.width()}}));
      KILN_TRY(Value * colFactor, b_.row(colCoefTable, kj, colFactorShape));
      for (int64_t ki = 0; ki < inK; ++ki) {
        KILN_TRY(Value * row, b_.row(rowIdxTable, ki, rowIndexShape));
        KILN_TRY(Value * rowFull, b_.op(OpKind::BroadcastTo, {row}, {{"shape", patchShape}}));
        // ...and of those, the term's row.
        KILN_TRY(Value * patch,
                 b_.op(OpKind::TakeAlongAxis, {atCols, rowFull}, {{"axis", axes_.height()}}));
        KILN_TRY(Value * rowFactor, b_.row(rowCoefTable, ki, rowFactorShape));
        KILN_TRY(Value * factor, b_.op(OpKind::Mul, {rowFactor, colFactor}));
        KILN_TRY(Value * term, b_.op(OpKind::Mul, {patch, factor}));
        inputTerms.push_back(term);
      }
    }
    KILN_TRY(Value * vSum, b_.sum(std::move(inputTerms)));
    // The transform's kernel writes the tile grid (the reshape after the transpose is an
    // alias), so it divides no index.
    const int64_t tiles = n_ * tilesH_ * tilesW_;
    if (axes_.nhwc) {
      KILN_TRY(Value * vGrid, b_.reshape(vSum, {n_, points, tilesH_, tilesW_, c_}));
      KILN_TRY(Value * vTiles,
               b_.op(OpKind::Transpose, {vGrid}, {{"perm", std::vector<int64_t>{1, 0, 2, 3, 4}}}));
      return b_.reshape(vTiles, {points, tiles, c_});
    }
    KILN_TRY(Value * vGrid, b_.reshape(vSum, {n_, c_, points, tilesH_, tilesW_}));
    KILN_TRY(Value * vTiles,
             b_.op(OpKind::Transpose, {vGrid}, {{"perm", std::vector<int64_t>{2, 1, 0, 3, 4}}}));
    return b_.reshape(vTiles, {points, c_, tiles});
  }

  /// y: output pixel (h, w), point (p, q) = (h mod m, w mod m) of tile (h / m, w / m), sums
  /// over the nonzeros a of AT's row p and b of its row q AT[p, a] AT[q, b] M[a alpha + b,
  /// tile]; `grid` is M as [points, N, tiles, O] (nhwc) or [points, O, N, tiles] (nchw).
  Expected<Value *> outputTransform(Value *grid) {
    const RowTerms outTerms = rowTerms(wm_.outputT, wm_.m, wm_.alpha);
    const int64_t outK = outTerms.most, m = wm_.m, alpha = wm_.alpha;
    const int64_t hOut = hOut_, wOut = wOut_;
    std::vector<double> tileRow(static_cast<size_t>(hOut)), tileCol(static_cast<size_t>(wOut));
    for (int64_t y = 0; y < hOut; ++y)
      tileRow[static_cast<size_t>(y)] = static_cast<double>((y / m) * tilesW_);
    for (int64_t xx = 0; xx < wOut; ++xx)
      tileCol[static_cast<size_t>(xx)] = static_cast<double>(xx / m);
    std::vector<double> pointRow(static_cast<size_t>(outK * hOut), 0.0);
    std::vector<double> outRowCoef(pointRow.size(), 0.0);
    std::vector<double> pointCol(static_cast<size_t>(outK * wOut), 0.0);
    std::vector<double> outColCoef(pointCol.size(), 0.0);
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
    const DType i32 = DType::I32, f32 = DType::F32;
    KILN_TRY(Value * tileRowTable, b_.constant(i32, {hOut, 1}, std::move(tileRow)));
    KILN_TRY(Value * tileColTable, b_.constant(i32, {1, wOut}, std::move(tileCol)));
    KILN_TRY(Value * pointRowTable, b_.constant(i32, {outK, hOut, 1}, std::move(pointRow)));
    KILN_TRY(Value * rowCoefOut, b_.constant(f32, {outK, hOut, 1}, std::move(outRowCoef)));
    KILN_TRY(Value * pointColTable, b_.constant(i32, {outK, 1, wOut}, std::move(pointCol)));
    KILN_TRY(Value * colCoefOut, b_.constant(f32, {outK, 1, wOut}, std::move(outColCoef)));
    KILN_TRY(Value * tileOf, b_.op(OpKind::Add, {tileRowTable, tileColTable}));
    // Every point of each pixel's tile: [points, N, H', W', O] or [points, O, N, H', W'].
    const int64_t tileAxis = axes_.nhwc ? 2 : 3;
    KILN_TRY(Value * atTiles, b_.op(OpKind::Gather, {grid, tileOf}, {{"axis", tileAxis}}));
    const Shape pointShape = axes_.nhwc ? Shape{1, 1, hOut, wOut, 1} : Shape{1, 1, 1, hOut, wOut};
    const Shape pickedShape =
        axes_.nhwc ? Shape{1, n_, hOut, wOut, o_} : Shape{1, o_, n_, hOut, wOut};
    const Shape factorShape = axes_.nhwc ? Shape{hOut, wOut, 1} : Shape{hOut, wOut};
    std::vector<Value *> outputTerms;
    for (int64_t ka = 0; ka < outK; ++ka) {
      KILN_TRY(Value * pointA, b_.row(pointRowTable, ka, {hOut, 1}));
      KILN_TRY(Value * factorA, b_.row(rowCoefOut, ka, {hOut, 1}));
      for (int64_t kb = 0; kb < outK; ++kb) {
        KILN_TRY(Value * pointB, b_.row(pointColTable, kb, {1, wOut}));
        KILN_TRY(Value * point, b_.op(OpKind::Add, {pointA, pointB}));
        KILN_TRY(Value * pointAt, b_.reshape(point, pointShape));
        KILN_TRY(Value * pointFull,
                 b_.op(OpKind::BroadcastTo, {pointAt}, {{"shape", pickedShape}}));
        KILN_TRY(Value * picked,
                 b_.op(OpKind::TakeAlongAxis, {atTiles, pointFull}, {{"axis", int64_t{0}}}));
        KILN_TRY(Value * factorB, b_.row(colCoefOut, kb, {1, wOut}));
        KILN_TRY(Value * factor, b_.op(OpKind::Mul, {factorA, factorB}));
        KILN_TRY(Value * factorAt, b_.reshape(factor, factorShape));
        KILN_TRY(Value * term, b_.op(OpKind::Mul, {picked, factorAt}));
        outputTerms.push_back(term);
      }
    }
    KILN_TRY(Value * ySum, b_.sum(std::move(outputTerms)));
    if (axes_.nhwc)
      return b_.reshape(ySum, {n_, hOut, wOut, o_});
    KILN_TRY(Value * yByChannel, b_.reshape(ySum, {o_, n_, hOut, wOut}));
    return b_.op(OpKind::Transpose, {yByChannel}, {{"perm", std::vector<int64_t>{1, 0, 2, 3}}});
  }

  Builder b_;
  const Node &conv_;
  const WinogradMatrices &wm_;
  ConvAxes axes_;
  int64_t n_ = 0, c_ = 0, h_ = 0, w_ = 0, o_ = 0, hOut_ = 0, wOut_ = 0;
  int64_t points_ = 0, tilesH_ = 0, tilesW_ = 0;
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
      KILN_TRY(Value * y, WinogradRewrite(graph, node, matrices).run());
      KILN_CHECK(y->type() == node.type(), "the Winograd convolution has the convolution's type");
      return y;
    });
  }

private:
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
  const std::string &layout = ir::getString(attrs, "layout");
  if ((layout != "nchw" && layout != "nhwc") || ir::getInt(attrs, "groups") != 1 ||
      ir::getInts(attrs, "stride") != one || ir::getInts(attrs, "dilation") != one ||
      ir::getBool(attrs, "allow_tf32") || ir::getType(attrs, "accumulate") != DType::F32)
    return false;
  const ConvAxes axes{layout == "nhwc"};
  // The transforms gather tiles, and gathers take static sizes (docs/dynamic-shapes.md).
  if (x.isSymbolic())
    return false;
  if (x.dtype != DType::F32 || w.dtype != DType::F32 || node.type().dtype != DType::F32 ||
      x.rank() != 4 || w.rank() != 4 || w.shape[axes.height()] != 3 || w.shape[axes.width()] != 3)
    return false;
  const Shape &out = node.type().shape;
  const int64_t c = x.shape[axes.channel()], o = w.shape[0];
  const int64_t hOut = out[axes.height()], wOut = out[axes.width()];
  if (hOut < options.outputTile || wOut < options.outputTile)
    return false;
  const std::vector<WinogradBounds> &bounds = axes.nhwc ? options.nhwc : options.nchw;
  return std::any_of(bounds.begin(), bounds.end(), [&](const WinogradBounds &bound) {
    return 2 * c * o >= bound.minChannelMean * (c + o) &&
           out[0] * hOut * wOut >= bound.minOutputPixels;
  });
}

std::unique_ptr<Pass> createWinogradPass(WinogradOptions options) {
  KILN_CHECK(options.outputTile == 2 || options.outputTile == 4,
             "Winograd output tiles are 2 or 4");
  return std::make_unique<WinogradConv>(options);
}

} // namespace kiln::passes
