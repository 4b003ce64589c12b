// Random GPU kernels without cross-thread operations (divergent ifs, ragged
// per-thread loops, lets, registers, narrow-float casts, intrinsics): the
// simulator's lockstep execution under masks must match the kernel IR
// evaluator, which runs one thread after another, bit for bit.
#include "SimTestUtil.h"

using namespace kiln;
using namespace kiln::kir;
using kiln::test::GpuCoords;
using kiln::test::gpuKernel;

namespace {

constexpr int64_t kSlots = 5; ///< output elements per thread

class RandomKernelGenerator {
public:
  RandomKernelGenerator(uint64_t seed, int64_t threads) : rng_(seed), threads_(threads) {
    inF_ = makeBuffer("in_f", DType::F32, threads * 4);
    inI_ = makeBuffer("in_i", DType::I32, threads * 4);
    inH_ = makeBuffer("in_h", DType::F16, threads * 4);
    outF_ = makeBuffer("out_f", DType::F32, threads * kSlots);
    outI_ = makeBuffer("out_i", DType::I64, threads * kSlots);
  }

  Kernel kernel(std::array<int64_t, 3> grid, std::array<int64_t, 3> block) {
    return gpuKernel("random", {inF_, inI_, inH_, outF_, outI_}, grid, block, {},
                     [&](const GpuCoords &c) {
                       coords_ = c;
                       ExprPtr blockLinear =
                           add(mul(add(mul(c.block[2], index(grid[1])), c.block[1]),
                                   index(grid[0])),
                               c.block[0]);
                       ExprPtr threadLinear =
                           add(mul(add(mul(c.thread[2], index(block[1])), c.thread[1]),
                                   index(block[0])),
                               c.thread[0]);
                       auto gid = makeVar("gid");
                       gid_ = kir::ref(gid);
                       ints_ = {gid_, c.thread[0], c.thread[1], c.thread[2], c.block[0],
                                c.block[1]};
                       int64_t perBlock = block[0] * block[1] * block[2];
                       return let(gid, add(mul(blockLinear, index(perBlock)), threadLinear),
                                  statements(3));
                     });
  }

private:
  Rng rng_;
  int64_t threads_;
  BufferPtr inF_, inI_, inH_, outF_, outI_;
  GpuCoords coords_;
  ExprPtr gid_;
  std::vector<ExprPtr> ints_; ///< i64 values in scope (coordinates, loop and let variables)
  int nextVar_ = 0;

  int pick(int n) { return static_cast<int>(rng_.nextU64() % static_cast<uint64_t>(n)); }

  /// An element index in [base * width, base * width + width) of this thread.
  ExprPtr slot(ExprPtr e, int64_t width) {
    ExprPtr w = index(width);
    return add(mul(gid_, w), mod(add(mod(std::move(e), w), w), w));
  }

  ExprPtr integer(int depth) {
    if (depth == 0 || pick(4) == 0) {
      switch (pick(3)) {
      case 0: return ints_[static_cast<size_t>(pick(static_cast<int>(ints_.size())))];
      case 1: return cast(load(inI_, slot(integer(0), 4)), Type::index());
      default: return index(pick(21) - 10);
      }
    }
    switch (pick(8)) {
    case 0: return add(integer(depth - 1), integer(depth - 1));
    case 1: return sub(integer(depth - 1), integer(depth - 1));
    case 2: return mul(integer(depth - 1), index(pick(7) - 3));
    case 3: return div(integer(depth - 1), integer(depth - 1));
    case 4: return mod(integer(depth - 1), integer(depth - 1));
    case 5: return pick(2) ? min(integer(depth - 1), integer(depth - 1))
                           : max(integer(depth - 1), integer(depth - 1));
    case 6: return select(condition(depth - 1), integer(depth - 1), integer(depth - 1));
    default: return neg(integer(depth - 1));
    }
  }

  ExprPtr condition(int depth) {
    switch (pick(5)) {
    case 0: return logicalNot(condition(std::max(depth - 1, 0)));
    case 1: return lt(floating(depth), floating(depth));
    case 2: return logicalAnd(lt(integer(depth), integer(depth)), ne(integer(0), index(0)));
    default: return pick(2) ? lt(integer(depth), integer(depth)) : ge(integer(depth), integer(depth));
    }
  }

  ExprPtr floating(int depth) {
    Type f32 = Type::scalar(DType::F32);
    if (depth == 0 || pick(4) == 0) {
      switch (pick(4)) {
      case 0: return load(inF_, slot(integer(0), 4));
      case 1: return cast(load(inH_, slot(integer(0), 4)), f32);
      case 2: return cast(integer(0), f32);
      default: return floatImm(pick(9) * 0.25 - 1.0, f32);
      }
    }
    switch (pick(8)) {
    case 0: return add(floating(depth - 1), floating(depth - 1));
    case 1: return sub(floating(depth - 1), floating(depth - 1));
    case 2: return mul(floating(depth - 1), floating(depth - 1));
    case 3: return div(floating(depth - 1), floating(depth - 1));
    case 4: return call(pick(2) ? Intrinsic::Sin : Intrinsic::Exp, {floating(depth - 1)});
    case 5: // through f16 and bf16
      return cast(cast(floating(depth - 1), Type::scalar(pick(2) ? DType::F16 : DType::BF16)), f32);
    case 6: return select(condition(depth - 1), floating(depth - 1), floating(depth - 1));
    default: return load(outF_, slot(integer(depth - 1), kSlots)); // a value this thread wrote
    }
  }

  StmtPtr statements(int depth) {
    std::vector<StmtPtr> stmts;
    int count = 1 + pick(3);
    for (int n = 0; n < count; ++n)
      stmts.push_back(statement(depth));
    return seq(stmts);
  }

  StmtPtr statement(int depth) {
    int choice = depth == 0 ? pick(2) : pick(6);
    switch (choice) {
    case 0: return store(outF_, slot(integer(2), kSlots), floating(3));
    case 1: return store(outI_, slot(integer(2), kSlots), integer(3));
    case 2: return ifThen(condition(2), statements(depth - 1),
                          pick(2) ? statements(depth - 1) : nullptr);
    case 3: {
      auto k = makeVar("k" + std::to_string(nextVar_++));
      static constexpr ForKind kKinds[] = {ForKind::Serial, ForKind::Unrolled,
                                           ForKind::Vectorized, ForKind::Parallel};
      ExprPtr begin = mod(integer(1), index(3)), extent = mod(integer(1), index(5));
      ints_.push_back(kir::ref(k));
      StmtPtr body = statements(depth - 1);
      ints_.pop_back();
      return forLoop(k, begin, extent, kKinds[pick(4)], body);
    }
    case 4: {
      auto v = makeVar("v" + std::to_string(nextVar_++));
      ExprPtr value = integer(2);
      ints_.push_back(kir::ref(v));
      StmtPtr body = statements(depth - 1);
      ints_.pop_back();
      return let(v, value, body);
    }
    default: {
      // A register the thread fills, updates in a loop and reads back.
      auto reg = makeBuffer("reg" + std::to_string(nextVar_++), DType::I64, 2, MemScope::Register);
      auto k = makeVar("r" + std::to_string(nextVar_++));
      ExprPtr extent = mod(integer(1), index(6));
      return allocate(
          reg, seq({store(reg, index(0), integer(1)), store(reg, index(1), index(0)),
                    forLoop(k, index(0), extent, ForKind::Serial,
                            store(reg, index(1), add(load(reg, index(1)),
                                                     mul(load(reg, index(0)), kir::ref(k))))),
                    store(outI_, slot(integer(1), kSlots), load(reg, index(1)))}));
    }
    }
  }
};

} // namespace

TEST_CASE("sim: random divergent kernels match the evaluator bit for bit", "[sim]") {
  const std::array<int64_t, 3> grid{3, 2, 1}, block{8, 5, 2};
  const int64_t threads = 3 * 2 * 8 * 5 * 2;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    RandomKernelGenerator generator(seed, threads);
    Kernel kernel = generator.kernel(grid, block);
    test::requireMatchesEvaluator(kernel);
  }
}
