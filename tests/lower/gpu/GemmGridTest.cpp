// The grid of GPU GEMM kernels (passes/lower/gpu/GemmGrid.h), evaluated block by block: every
// (batch, split, tile) is some block's exactly once, in 2-D grids and in grids folded into x
// past CUDA's 65535 limit on y and z, row by row or in the grouped tile order.
#include "ir/kernel/Builder.h"
#include "ir/kernel/IRUtils.h"
#include "passes/kernel/Passes.h"
#include "passes/lower/gpu/GemmGrid.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <map>
#include <set>
#include <tuple>
#include <vector>

using namespace kiln;
using namespace kiln::kir;

namespace {

struct BlockLoop {
  const Var *var;
  int64_t extent;
};

/// The block loops `grid.wrap` makes, outermost first.
std::vector<BlockLoop> blockLoops(const StmtPtr &nest) {
  std::vector<BlockLoop> loops;
  for (const Stmt *s = nest.get(); s && s->kind() == StmtKind::For;) {
    auto &loop = static_cast<const For &>(*s);
    loops.push_back({loop.var.get(), as<IntImm>(*loop.extent)->value});
    s = loop.body.get();
  }
  return loops;
}

/// `expr` with each block variable replaced by its coordinate, folded to a constant.
int64_t valueAt(const ExprPtr &expr, const std::vector<BlockLoop> &loops,
                const std::vector<int64_t> &coords) {
  ExprPtr e = expr;
  for (size_t l = 0; l < loops.size(); ++l)
    e = substitute(e, loops[l].var, index(coords[l]));
  ExprPtr folded = simplifyExpr(e);
  const auto *constant = as<IntImm>(*folded);
  REQUIRE(constant);
  return constant->value;
}

struct Case {
  int64_t batch, m, n, splits, groupM;
  int64_t blockM = 64, blockN = 32;
};

/// Visits every block (or, where a grid has too many, the blocks of its first three and last
/// (batch, split) layers) and checks that each layer's tiles are covered exactly once and that
/// consecutive blocks of a layer follow the tile order.
void checkGrid(const Case &c) {
  INFO(fmt::format("batch {} m {} n {} splits {} groupM {}", c.batch, c.m, c.n, c.splits,
                   c.groupM));
  lower::GemmProblem problem;
  problem.batch = c.batch;
  problem.m = c.m;
  problem.n = c.n;
  problem.k = 64;
  lower::GemmGrid grid(problem, c.blockM, c.blockN, "g", c.splits, c.groupM);
  REQUIRE_FALSE(grid.empty());
  std::vector<BlockLoop> loops =
      blockLoops(grid.wrap(std::make_shared<Block>(std::vector<StmtPtr>{})));
  REQUIRE_FALSE(loops.empty());
  const int64_t tilesM = (c.m + c.blockM - 1) / c.blockM;
  const int64_t tilesN = (c.n + c.blockN - 1) / c.blockN;
  const int64_t layers = c.batch * c.splits, tiles = tilesM * tilesN;
  std::set<int64_t> sampled{0, 1, 2, layers - 1};
  std::map<std::pair<int64_t, int64_t>, std::set<std::pair<int64_t, int64_t>>> seen;
  // Blocks in launch order (x fastest): the loops are outermost first.
  int64_t total = 1;
  for (const BlockLoop &loop : loops)
    total *= loop.extent;
  CHECK(total == layers * tiles);
  auto visit = [&](int64_t linear) {
    std::vector<int64_t> coords(loops.size());
    int64_t rest = linear;
    for (size_t l = loops.size(); l-- > 0;) {
      coords[l] = rest % loops[l].extent;
      rest /= loops[l].extent;
    }
    int64_t b = valueAt(grid.batch(), loops, coords), s = valueAt(grid.split(), loops, coords);
    int64_t i0 = valueAt(grid.row0(), loops, coords), j0 = valueAt(grid.col0(), loops, coords);
    CHECK(i0 % c.blockM == 0);
    CHECK(j0 % c.blockN == 0);
    CHECK(i0 < c.m);
    CHECK(j0 < c.n);
    CHECK(b < c.batch);
    CHECK(s < c.splits);
    CHECK(seen[{b, s}].insert({i0 / c.blockM, j0 / c.blockN}).second);
  };
  for (int64_t layer : sampled)
    if (layer >= 0 && layer < layers)
      for (int64_t t = 0; t < tiles; ++t)
        visit(layer * tiles + t); // the launch order: layers, then each layer's tiles
  for (const auto &[layer, covered] : seen)
    CHECK(int64_t(covered.size()) == tiles);
}

} // namespace

TEST_CASE("GPU GEMM grids: every tile once, in order", "[lower][gpu-contraction]") {
  for (const Case &c : {Case{1, 300, 200, 1, 1}, Case{3, 300, 200, 2, 1}, Case{1, 300, 200, 1, 4},
                        Case{2, 1000, 96, 3, 8}, Case{1, 64, 96, 1, 8}})
    checkGrid(c);
  // Folded into grid x: more (batch, split) layers than grid z may have, grouped or not.
  for (const Case &c : {Case{70000, 100, 40, 1, 1}, Case{40000, 130, 40, 2, 2}})
    checkGrid(c);
}

TEST_CASE("GPU GEMM grids: the grouped order walks groups of rows column by column",
          "[lower][gpu-contraction]") {
  // 6 rows of tiles in groups of 4 (then 2), 3 columns: launch order visits (row, column)
  // (0,0) (1,0) (2,0) (3,0) (0,1) ... (3,2), then (4,0) (5,0) (4,1) (5,1) (4,2) (5,2).
  lower::GemmProblem problem;
  problem.m = 6 * 64;
  problem.n = 3 * 32;
  problem.k = 64;
  lower::GemmGrid grid(problem, 64, 32, "g", 1, 4);
  std::vector<BlockLoop> loops =
      blockLoops(grid.wrap(std::make_shared<Block>(std::vector<StmtPtr>{})));
  REQUIRE(loops.size() == 2); // y (M tiles) outside x (N tiles)
  std::vector<std::pair<int64_t, int64_t>> order;
  for (int64_t y = 0; y < loops[0].extent; ++y)
    for (int64_t x = 0; x < loops[1].extent; ++x)
      order.push_back({valueAt(grid.row0(), loops, {y, x}) / 64,
                       valueAt(grid.col0(), loops, {y, x}) / 32});
  std::vector<std::pair<int64_t, int64_t>> expected;
  for (int64_t col = 0; col < 3; ++col)
    for (int64_t row = 0; row < 4; ++row)
      expected.push_back({row, col});
  for (int64_t col = 0; col < 3; ++col)
    for (int64_t row = 4; row < 6; ++row)
      expected.push_back({row, col});
  CHECK(order == expected);
}
