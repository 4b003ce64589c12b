// GPU kernels built with the kernel IR builder for the CUDA C backend tests:
// each exercises one feature (grid tail guard, vector copy, shared-memory
// reduction, shuffles, atomics, intrinsics, casts, integer division, 2-D
// layouts, predication) in the structure kir::gpuLaunchOf accepts.
#pragma once

#include "ir/kernel/Builder.h"

#include <fmt/format.h>

#include <string>
#include <vector>

namespace kiln::testing::cuda {

using namespace kiln::kir;

inline Type f32() { return Type::scalar(DType::F32); }
inline Type i32() { return Type::scalar(DType::I32); }

/// for blk in block.x [0, blocks) { for t in thread.x [0, threads) { body(blk, t) } }
inline StmtPtr gridLoops(int64_t blocks, int64_t threads, const VarPtr &blk, const VarPtr &t,
                         StmtPtr body) {
  return forRange(blk, blocks, ForKind::BlockX, forRange(t, threads, ForKind::ThreadX, std::move(body)));
}

/// out[i] = a[i] + b[i] for i < n, 256 threads per block, with a tail guard.
inline Kernel vectorAddKernel(int64_t n) {
  auto a = makeBuffer("a", DType::F32, n), b = makeBuffer("b", DType::F32, n);
  auto out = makeBuffer("out", DType::F32, n);
  auto blk = makeVar("blk"), t = makeVar("t"), i = makeVar("i");
  StmtPtr body = let(i, add(mul(kir::ref(blk), index(256)), kir::ref(t)),
                     ifThen(lt(kir::ref(i), index(n)),
                            store(out, kir::ref(i), add(load(a, kir::ref(i)), load(b, kir::ref(i))))));
  return Kernel{"vector_add", {a, b, out}, gridLoops((n + 255) / 256, 256, blk, t, body)};
}

/// out[4k .. 4k+3] = in[4k .. 4k+3] as one f32x4 load and store per thread.
inline Kernel copyF32x4Kernel() {
  const int64_t n = 4 * 64 * 4;
  auto in = makeBuffer("in", DType::F32, n), out = makeBuffer("out", DType::F32, n);
  auto blk = makeVar("blk"), t = makeVar("t");
  ExprPtr base = mul(add(mul(kir::ref(blk), index(64)), kir::ref(t)), index(4));
  return Kernel{"copy_f32x4", {in, out}, gridLoops(4, 64, blk, t, store(out, base, load(in, base, 4)))};
}

/// out[blk] = sum of in[blk*256 .. +256) by a tree in shared memory with barriers.
inline Kernel blockReduceKernel() {
  const int64_t threads = 256, blocks = 3;
  auto in = makeBuffer("in", DType::F32, threads * blocks), out = makeBuffer("out", DType::F32, blocks);
  auto partial = makeBuffer("partial", DType::F32, threads, MemScope::Shared);
  auto blk = makeVar("blk"), t = makeVar("t");
  std::vector<StmtPtr> steps = {store(partial, kir::ref(t), load(in, add(mul(kir::ref(blk), index(threads)), kir::ref(t)))),
                                barrier()};
  for (int64_t stride = threads / 2; stride >= 1; stride /= 2) {
    steps.push_back(ifThen(lt(kir::ref(t), index(stride)),
                           store(partial, kir::ref(t),
                                 add(load(partial, kir::ref(t)), load(partial, add(kir::ref(t), index(stride)))))));
    steps.push_back(barrier());
  }
  steps.push_back(ifThen(eq(kir::ref(t), index(0)), store(out, kir::ref(blk), load(partial, index(0)))));
  StmtPtr body = forRange(blk, blocks, ForKind::BlockX,
                          allocate(partial, forRange(t, threads, ForKind::ThreadX, seq(steps))));
  return Kernel{"block_reduce", {in, out}, body};
}

/// out[t] = shuffle(mode, in[t], 3) over one warp.
inline Kernel shuffleKernel(ShuffleMode mode, DType dtype) {
  auto in = makeBuffer("in", dtype, 32), out = makeBuffer("out", dtype, 32);
  auto blk = makeVar("blk"), t = makeVar("t");
  ExprPtr value = shuffle(mode, load(in, kir::ref(t)), intImm(3, i32()));
  return Kernel{fmt::format("shuffle_{}_{}", shuffleModeName(mode), dtypeName(dtype)),
                {in, out},
                gridLoops(1, 32, blk, t, store(out, kir::ref(t), value))};
}

/// A warp-sum reduction of f32 by xor shuffles: out[0] = sum(in[0..32)).
inline Kernel warpReduceKernel() {
  auto in = makeBuffer("in", DType::F32, 32), out = makeBuffer("out", DType::F32, 1);
  auto blk = makeVar("blk"), t = makeVar("t");
  std::vector<VarPtr> sums;
  ExprPtr current = load(in, kir::ref(t));
  std::vector<std::pair<VarPtr, ExprPtr>> lets;
  for (int offset = 16; offset >= 1; offset /= 2) {
    auto sum = makeVar(fmt::format("sum{}", offset), f32());
    lets.push_back({sum, add(current, shuffle(ShuffleMode::Xor, current, intImm(offset, i32())))});
    current = kir::ref(sum);
  }
  StmtPtr body = ifThen(eq(kir::ref(t), index(0)), store(out, index(0), current));
  for (auto it = lets.rbegin(); it != lets.rend(); ++it)
    body = let(it->first, it->second, body);
  return Kernel{"warp_reduce", {in, out}, gridLoops(1, 32, blk, t, body)};
}

/// Global and shared atomics: sums and extremes of `in` per dtype.
inline Kernel atomicsKernel() {
  auto inF = makeBuffer("in_f32", DType::F32, 128), inD = makeBuffer("in_f64", DType::F64, 128);
  auto inI = makeBuffer("in_i32", DType::I32, 128), inL = makeBuffer("in_i64", DType::I64, 128);
  auto sums = makeBuffer("sums_f32", DType::F32, 1), sumD = makeBuffer("sums_f64", DType::F64, 1);
  auto extI = makeBuffer("extremes_i32", DType::I32, 3), extL = makeBuffer("extremes_i64", DType::I64, 3);
  auto local = makeBuffer("block_sum", DType::I32, 1, MemScope::Shared);
  auto blk = makeVar("blk"), t = makeVar("t");
  ExprPtr i = add(mul(kir::ref(blk), index(64)), kir::ref(t));
  StmtPtr body = seq({
      atomic(AtomicOp::Add, sums, index(0), load(inF, i)),
      atomic(AtomicOp::Add, sumD, index(0), load(inD, i)),
      atomic(AtomicOp::Add, extI, index(0), load(inI, i)),
      atomic(AtomicOp::Max, extI, index(1), load(inI, i)),
      atomic(AtomicOp::Min, extI, index(2), load(inI, i)),
      atomic(AtomicOp::Add, extL, index(0), load(inL, i)),
      atomic(AtomicOp::Max, extL, index(1), load(inL, i)),
      atomic(AtomicOp::Min, extL, index(2), load(inL, i)),
      atomic(AtomicOp::Add, local, index(0), load(inI, i)),
  });
  return Kernel{"atomics",
                {inF, inD, inI, inL, sums, sumD, extI, extL},
                forRange(blk, 2, ForKind::BlockX,
                         allocate(local, forRange(t, 64, ForKind::ThreadX, body)))};
}

/// out[k * n + i] = intrinsic_k(in[i]) for every intrinsic, in `dtype`.
inline Kernel intrinsicsKernel(DType dtype) {
  const int64_t n = 64;
  Type type = Type::scalar(dtype);
  const Intrinsic all[] = {Intrinsic::Exp,  Intrinsic::Log,  Intrinsic::Sqrt, Intrinsic::Rsqrt,
                           Intrinsic::Tanh, Intrinsic::Erf,  Intrinsic::Sin,  Intrinsic::Cos,
                           Intrinsic::Abs,  Intrinsic::Floor, Intrinsic::Pow, Intrinsic::Fma};
  auto in = makeBuffer("in", dtype, n), out = makeBuffer("out", dtype, n * 12);
  auto blk = makeVar("blk"), t = makeVar("t"), x = makeVar("x", type);
  std::vector<StmtPtr> stores;
  int64_t k = 0;
  for (Intrinsic fn : all) {
    std::vector<ExprPtr> args = {kir::ref(x)};
    if (fn == Intrinsic::Pow)
      args.push_back(constant(1.5, type));
    if (fn == Intrinsic::Fma)
      args = {kir::ref(x), kir::ref(x), constant(-0.25, type)};
    stores.push_back(store(out, add(kir::ref(t), index(k++ * n)), call(fn, args)));
  }
  return Kernel{fmt::format("intrinsics_{}", dtypeName(dtype)),
                {in, out},
                gridLoops(1, n, blk, t, let(x, load(in, kir::ref(t)), seq(stores)))};
}

/// Round trips of f32 through every narrow float and integer type, f64 into
/// narrow floats, and integer/bool casts: out[k * n + i].
inline Kernel castsKernel() {
  const int64_t n = 32;
  auto in = makeBuffer("in", DType::F32, n), inD = makeBuffer("in_f64", DType::F64, n);
  auto inI = makeBuffer("in_i64", DType::I64, n);
  auto out = makeBuffer("out", DType::F32, n * 12);
  auto halves = makeBuffer("halves", DType::F16, n), bytes = makeBuffer("bytes", DType::F8E4M3, n);
  auto blk = makeVar("blk"), t = makeVar("t");
  ExprPtr x = load(in, kir::ref(t)), d = load(inD, kir::ref(t)), l = load(inI, kir::ref(t));
  auto through = [&](DType mid) { return cast(cast(x, Type::scalar(mid)), f32()); };
  std::vector<ExprPtr> results = {
      through(DType::F16),    through(DType::BF16), through(DType::F8E4M3), through(DType::F8E5M2),
      through(DType::I32),    through(DType::I8),   through(DType::I64),    through(DType::Bool),
      cast(cast(d, Type::scalar(DType::BF16)), f32()),
      cast(cast(l, Type::scalar(DType::F16)), f32()),
      cast(cast(cast(l, i32()), Type::scalar(DType::I8)), f32()),
      cast(cast(d, Type::scalar(DType::F8E5M2)), f32()),
  };
  std::vector<StmtPtr> stores;
  for (size_t k = 0; k < results.size(); ++k)
    stores.push_back(store(out, add(kir::ref(t), index(static_cast<int64_t>(k) * n)), results[k]));
  stores.push_back(store(halves, kir::ref(t), cast(d, Type::scalar(DType::F16))));
  stores.push_back(store(bytes, kir::ref(t), cast(x, Type::scalar(DType::F8E4M3))));
  return Kernel{"casts", {in, inD, inI, out, halves, bytes}, gridLoops(1, n, blk, t, seq(stores))};
}

/// Integer / and % with divisors read from memory (zero and -1 included by the caller).
inline Kernel integerDivisionKernel() {
  const int64_t n = 64;
  auto a = makeBuffer("a", DType::I32, n), b = makeBuffer("b", DType::I32, n);
  auto a64 = makeBuffer("a64", DType::I64, n), b64 = makeBuffer("b64", DType::I64, n);
  auto q = makeBuffer("q", DType::I32, n), r = makeBuffer("r", DType::I32, n);
  auto q64 = makeBuffer("q64", DType::I64, n), r64 = makeBuffer("r64", DType::I64, n);
  auto blk = makeVar("blk"), t = makeVar("t");
  StmtPtr body = seq({
      store(q, kir::ref(t), div(load(a, kir::ref(t)), load(b, kir::ref(t)))),
      store(r, kir::ref(t), mod(load(a, kir::ref(t)), load(b, kir::ref(t)))),
      store(q64, kir::ref(t), div(load(a64, kir::ref(t)), load(b64, kir::ref(t)))),
      store(r64, kir::ref(t), mod(load(a64, kir::ref(t)), load(b64, kir::ref(t)))),
  });
  return Kernel{"integer_division", {a, b, a64, b64, q, r, q64, r64}, gridLoops(1, n, blk, t, body)};
}

/// A rows x cols transpose over block.y/block.x and thread.y/thread.x tiles of 8x32.
inline Kernel transpose2dKernel(int64_t rows, int64_t cols) {
  auto in = makeBuffer("in", DType::F32, rows * cols), out = makeBuffer("out", DType::F32, rows * cols);
  auto by = makeVar("by"), bx = makeVar("bx"), ty = makeVar("ty"), tx = makeVar("tx");
  auto row = makeVar("row"), col = makeVar("col");
  StmtPtr inner = let(row, add(mul(kir::ref(by), index(8)), kir::ref(ty)),
                      let(col, add(mul(kir::ref(bx), index(32)), kir::ref(tx)),
                          ifThen(logicalAnd(lt(kir::ref(row), index(rows)), lt(kir::ref(col), index(cols))),
                                 store(out, add(mul(kir::ref(col), index(rows)), kir::ref(row)),
                                       load(in, add(mul(kir::ref(row), index(cols)), kir::ref(col)))))));
  StmtPtr body = forRange(by, (rows + 7) / 8, ForKind::BlockY,
                          forRange(bx, (cols + 31) / 32, ForKind::BlockX,
                                   forRange(ty, 8, ForKind::ThreadY, forRange(tx, 32, ForKind::ThreadX, inner))));
  return Kernel{"transpose_2d", {in, out}, body};
}

/// Predicated scalar and vector accesses: lanes past n read zero and write nothing.
inline Kernel predicatedKernel(int64_t n) {
  const int64_t padded = (n + 3) / 4 * 4;
  auto in = makeBuffer("in", DType::F32, padded), out = makeBuffer("out", DType::F32, padded);
  auto scalarOut = makeBuffer("scalar_out", DType::F32, padded);
  auto blk = makeVar("blk"), t = makeVar("t");
  ExprPtr base = mul(kir::ref(t), index(4));
  ExprPtr whole = lt(add(base, index(3)), index(n));
  StmtPtr body = seq({
      store(out, base, mul(load(in, base, 4, whole), broadcast(floatImm(2.0, f32()), 4)), whole),
      store(scalarOut, kir::ref(t), load(in, kir::ref(t), 1, lt(kir::ref(t), index(n))), lt(kir::ref(t), index(n))),
  });
  return Kernel{"predicated", {in, out, scalarOut}, gridLoops(1, padded / 4, blk, t, body)};
}

/// An f32x8 access (32 bytes: no CUDA vector type, so lane by lane) bound to a
/// vector let, scaled by a broadcast scalar read from memory.
inline Kernel scaleF32x8Kernel() {
  auto in = makeBuffer("in", DType::F32, 8 * 32), scale = makeBuffer("scale", DType::F32, 1);
  auto out = makeBuffer("out", DType::F32, 8 * 32);
  auto blk = makeVar("blk"), t = makeVar("t"), v = makeVar("v", Type{DType::F32, 8});
  ExprPtr base = mul(kir::ref(t), index(8));
  StmtPtr body = let(v, load(in, base, 8),
                     store(out, base, mul(kir::ref(v), broadcast(load(scale, index(0)), 8))));
  return Kernel{"scale_f32x8", {in, scale, out}, gridLoops(1, 32, blk, t, body)};
}

/// Every test kernel, in one translation unit.
inline std::vector<Kernel> allTestKernels() {
  std::vector<Kernel> kernels = {vectorAddKernel(1000), copyF32x4Kernel(), blockReduceKernel(),
                                 warpReduceKernel(),    atomicsKernel(),   intrinsicsKernel(DType::F32),
                                 intrinsicsKernel(DType::F64), castsKernel(), integerDivisionKernel(),
                                 transpose2dKernel(37, 45),     predicatedKernel(61),
                                 scaleF32x8Kernel()};
  for (ShuffleMode mode : {ShuffleMode::Xor, ShuffleMode::Down, ShuffleMode::Up, ShuffleMode::Idx})
    for (DType dtype : {DType::I32, DType::F32, DType::F64, DType::I64})
      kernels.push_back(shuffleKernel(mode, dtype));
  return kernels;
}

} // namespace kiln::testing::cuda
