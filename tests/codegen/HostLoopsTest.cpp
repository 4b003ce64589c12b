// Host JIT tests of loops: parallel + vectorized element-wise kernels, a
// reduction through a Local accumulator, nested parallel loops, closures that
// capture outer lets, allocations inside parallel bodies, loop kinds.
#include "HostTestUtil.h"

#include <fmt/format.h>

#include <cmath>
#include <numeric>
#include <thread>

using namespace kiln;
using namespace kiln::kir;
using kiln::testing::AlignedVector;
using kiln::testing::JitKernel;

namespace {

/// c[i] = a[i] + b[i]: parallel over blocks of 64, vectorized inside a block.
Kernel vectorAddKernel(int64_t n) {
  auto a = makeBuffer("a", DType::F32, n);
  auto b = makeBuffer("b", DType::F32, n);
  auto c = makeBuffer("c", DType::F32, n);
  auto block = makeVar("block");
  auto base = makeVar("base");
  auto count = makeVar("count");
  auto j = makeVar("j");
  ExprPtr i = add(kir::ref(base), kir::ref(j));
  StmtPtr inner = forLoop(j, index(0), kir::ref(count), ForKind::Vectorized,
                          store(c, i, add(load(a, i), load(b, i))));
  StmtPtr body = let(base, mul(kir::ref(block), index(64)),
                     let(count, kir::min(index(64), sub(index(n), kir::ref(base))), inner));
  return Kernel{"vector_add", {a, b, c}, forRange(block, (n + 63) / 64, ForKind::Parallel, body)};
}

} // namespace

TEST_CASE("vector add: parallel blocks with a vectorized inner loop", "[codegen][host]") {
  for (int64_t n : {1, 63, 64, 1003, 4096 + 5}) {
    JitKernel kernel(vectorAddKernel(n));
    AlignedVector<float> a(n), b(n), c(n, -999.0f);
    for (int64_t i = 0; i < n; ++i) {
      a[i] = 0.5f * static_cast<float>(i) - 3.25f;
      b[i] = std::sin(static_cast<float>(i)) * 100.0f;
    }
    kernel({a.data(), b.data(), c.data()});
    for (int64_t i = 0; i < n; ++i)
      REQUIRE(c[i] == a[i] + b[i]);
  }
}

TEST_CASE("row sums through a Local accumulator in a parallel loop", "[codegen][host]") {
  const int64_t rows = 37, cols = 101;
  auto in = makeBuffer("in", DType::F32, rows * cols);
  auto out = makeBuffer("out", DType::F32, rows);
  auto acc = makeBuffer("acc", DType::F32, 1, MemScope::Local);
  auto r = makeVar("r"), k = makeVar("k");
  StmtPtr body = allocate(
      acc, seq({store(acc, index(0), floatImm(0.0, Type::scalar(DType::F32))),
                forRange(k, cols, ForKind::Serial,
                         store(acc, index(0),
                               add(load(acc, index(0)),
                                   load(in, add(mul(kir::ref(r), index(cols)), kir::ref(k)))))),
                store(out, kir::ref(r), load(acc, index(0)))}));
  JitKernel kernel(Kernel{"row_sum", {in, out}, forRange(r, rows, ForKind::Parallel, body)});
  AlignedVector<float> input(rows * cols), output(rows, -1.0f);
  for (size_t i = 0; i < input.size(); ++i)
    input[i] = static_cast<float>((i * 7919) % 1000) / 64.0f - 7.0f;
  kernel({input.data(), output.data()});
  for (int64_t row = 0; row < rows; ++row) {
    float expected = 0.0f; // same order as the kernel: results match exactly
    for (int64_t col = 0; col < cols; ++col)
      expected += input[row * cols + col];
    REQUIRE(output[row] == expected);
  }
}

TEST_CASE("nested parallel loops run the inner loop serially and cover all", "[codegen][host]") {
  const int64_t outerN = 7, innerN = 13;
  auto out = makeBuffer("out", DType::I64, outerN * innerN);
  auto i = makeVar("i"), j = makeVar("j");
  StmtPtr inner = forRange(j, innerN, ForKind::Parallel,
                           store(out, add(mul(kir::ref(i), index(innerN)), kir::ref(j)),
                                 add(mul(kir::ref(i), index(100)), kir::ref(j))));
  Kernel k{"nested_parallel", {out}, forRange(i, outerN, ForKind::Parallel, inner)};
  auto ir = codegen::emitHostLlvmIr(k, kiln::testing::hostTarget(), false);
  REQUIRE(ir.has_value());
  // One outlined body only: the inner loop is serial inside it.
  CHECK(ir->find("nested_parallel.parallel0") != std::string::npos);
  CHECK(ir->find("nested_parallel.parallel1") == std::string::npos);
  JitKernel kernel(k);
  AlignedVector<int64_t> result(outerN * innerN, -1);
  kernel({result.data()});
  for (int64_t a = 0; a < outerN; ++a)
    for (int64_t b = 0; b < innerN; ++b)
      REQUIRE(result[a * innerN + b] == a * 100 + b);
}

TEST_CASE("a parallel loop captures outer lets of every kind", "[codegen][host]") {
  const int64_t n = 203;
  auto params = makeBuffer("params", DType::F32, 2);
  auto in = makeBuffer("in", DType::F32, n);
  auto out = makeBuffer("out", DType::F32, n);
  auto outVec = makeBuffer("out_vec", DType::F32, 4 * n);
  auto scale = makeVar("scale", Type::scalar(DType::F32));
  auto shift = makeVar("shift", Type::index());
  auto negate = makeVar("negate", Type::boolean());
  auto splat = makeVar("splat", Type{DType::F32, 4});
  auto i = makeVar("i");
  Type f32 = Type::scalar(DType::F32);
  // out[i] = (negate ? -1 : 1) * (in[i] * scale + shift); out_vec[4i..4i+3] = splat * in[i]
  ExprPtr scaled = add(mul(load(in, kir::ref(i)), kir::ref(scale)), cast(kir::ref(shift), f32));
  ExprPtr value = select(kir::ref(negate), neg(scaled), scaled);
  StmtPtr loop = forLoop(i, index(0), index(n), ForKind::Parallel,
                         seq({store(out, kir::ref(i), value),
                              store(outVec, mul(kir::ref(i), index(4)),
                                    mul(kir::ref(splat), broadcast(load(in, kir::ref(i)), 4)))}));
  StmtPtr body = let(scale, load(params, index(0)),
                     let(shift, cast(load(params, index(1)), Type::index()),
                         let(negate, lt(kir::ref(scale), floatImm(0.0, f32)),
                             let(splat, broadcast(kir::ref(scale), 4), loop))));
  JitKernel kernel(Kernel{"capture_lets", {params, in, out, outVec}, body});
  for (float s : {2.5f, -0.5f}) {
    AlignedVector<float> p{s, 7.0f}, input(n), output(n, 0.0f), outputVec(4 * n, 0.0f);
    for (int64_t k = 0; k < n; ++k)
      input[k] = static_cast<float>(k) * 0.25f - 10.0f;
    kernel({p.data(), input.data(), output.data(), outputVec.data()});
    for (int64_t k = 0; k < n; ++k) {
      float expected = input[k] * s + 7.0f;
      if (s < 0)
        expected = -expected;
      REQUIRE(output[k] == expected);
      for (int lane = 0; lane < 4; ++lane)
        REQUIRE(outputVec[4 * k + lane] == s * input[k]);
    }
  }
}

TEST_CASE("Allocate inside a parallel body gives each iteration its own buffer",
          "[codegen][host]") {
  const int64_t rows = 50, width = 8;
  auto in = makeBuffer("in", DType::F32, rows * width);
  auto out = makeBuffer("out", DType::F32, rows * width);
  auto tmp = makeBuffer("tmp", DType::F32, width, MemScope::Local);
  auto r = makeVar("r"), k = makeVar("k"), m = makeVar("m");
  ExprPtr row = mul(kir::ref(r), index(width));
  StmtPtr body =
      allocate(tmp, seq({forRange(k, width, ForKind::Unrolled,
                                  store(tmp, kir::ref(k),
                                        mul(load(in, add(row, kir::ref(k))),
                                            floatImm(2.0, Type::scalar(DType::F32))))),
                         forRange(m, width, ForKind::Serial,
                                  store(out, add(row, kir::ref(m)),
                                        load(tmp, sub(index(width - 1), kir::ref(m)))))}));
  JitKernel kernel(
      Kernel{"alloc_in_parallel", {in, out}, forRange(r, rows, ForKind::Parallel, body)});
  AlignedVector<float> input(rows * width), output(rows * width, 0.0f);
  std::iota(input.begin(), input.end(), 1.0f);
  kernel({input.data(), output.data()});
  for (int64_t a = 0; a < rows; ++a)
    for (int64_t b = 0; b < width; ++b)
      REQUIRE(output[a * width + b] == 2.0f * input[a * width + (width - 1 - b)]);
}

TEST_CASE("large Local buffers live on the heap, also in parallel bodies", "[codegen][host]") {
  // 48K i64 = 384 KiB: above the stack limit for scratch.
  const int64_t size = 48 * 1024, rows = 6;
  auto out = makeBuffer("out", DType::I64, rows);
  auto big = makeBuffer("big", DType::I64, size, MemScope::Local);
  auto r = makeVar("r"), k = makeVar("k"), m = makeVar("m");
  auto sum = makeBuffer("sum", DType::I64, 1, MemScope::Register);
  StmtPtr body = allocate(
      big, allocate(sum, seq({forRange(k, size, ForKind::Serial,
                                       store(big, kir::ref(k), add(kir::ref(k), kir::ref(r)))),
                              store(sum, index(0), index(0)),
                              forRange(m, size, ForKind::Serial,
                                       store(sum, index(0),
                                             add(load(sum, index(0)),
                                                 load(big, sub(index(size - 1), kir::ref(m)))))),
                              store(out, kir::ref(r), load(sum, index(0)))})));
  Kernel k1{"big_scratch", {out}, forRange(r, rows, ForKind::Parallel, body)};
  auto ir = codegen::emitHostLlvmIr(k1, kiln::testing::hostTarget(), false);
  REQUIRE(ir.has_value());
  CHECK(ir->find("@kiln_cpu_scratch_alloc(i64 393216)") != std::string::npos);
  CHECK(ir->find("call void @kiln_cpu_scratch_free") != std::string::npos);
  JitKernel kernel(k1);
  AlignedVector<int64_t> result(rows, -1);
  kernel({result.data()});
  for (int64_t row = 0; row < rows; ++row)
    REQUIRE(result[row] == size * (size - 1) / 2 + size * row);
}

TEST_CASE("loops with a non-zero begin, of every host kind", "[codegen][host]") {
  const int64_t n = 40;
  for (ForKind kind :
       {ForKind::Serial, ForKind::Unrolled, ForKind::Vectorized, ForKind::Parallel}) {
    auto out = makeBuffer("out", DType::I32, n);
    auto i = makeVar("i");
    // out[i] = 3 * i for i in [5, 5 + 29)
    StmtPtr loop = forLoop(
        i, index(5), index(29), kind,
        store(out, kir::ref(i), cast(mul(kir::ref(i), index(3)), Type::scalar(DType::I32))));
    JitKernel kernel(Kernel{fmt::format("begin_{}", forKindName(kind)), {out}, loop});
    AlignedVector<int32_t> result(n, -7);
    kernel({result.data()});
    for (int64_t k = 0; k < n; ++k)
      REQUIRE(result[k] == (k >= 5 && k < 34 ? 3 * k : -7));
  }
}

TEST_CASE("a parallel loop with extent zero runs nothing", "[codegen][host]") {
  auto out = makeBuffer("out", DType::I32, 4);
  auto extent = makeBuffer("extent", DType::I64, 1);
  auto i = makeVar("i");
  StmtPtr loop = forLoop(i, index(0), load(extent, index(0)), ForKind::Parallel,
                         store(out, kir::ref(i), intImm(1, Type::scalar(DType::I32))));
  JitKernel kernel(Kernel{"empty_parallel", {out, extent}, loop});
  AlignedVector<int32_t> result(4, 0);
  AlignedVector<int64_t> n{0};
  kernel({result.data(), n.data()});
  CHECK(result == AlignedVector<int32_t>{0, 0, 0, 0});
  n[0] = 3;
  kernel({result.data(), n.data()});
  CHECK(result == AlignedVector<int32_t>{1, 1, 1, 0});
}

TEST_CASE("several kernels share one module", "[codegen][host]") {
  auto out = makeBuffer("out", DType::I32, 1);
  Kernel one{"write_one", {out}, store(out, index(0), intImm(1, Type::scalar(DType::I32)))};
  Kernel two{"write_two", {out}, store(out, index(0), intImm(2, Type::scalar(DType::I32)))};
  auto module = kiln::testing::compileKernels({one, two, vectorAddKernel(10)});
  CHECK(module->lookup("missing") == nullptr);
  CHECK(module->lookup("write_one.parallel0") == nullptr);
  AlignedVector<int32_t> value{0};
  void *args[] = {value.data()};
  module->lookupKernel("write_two")(args);
  CHECK(value[0] == 2);
  module->lookupKernel("write_one")(args);
  CHECK(value[0] == 1);
  CHECK(module->lookup("vector_add") != nullptr);
}

TEST_CASE("an if/else writes one branch", "[codegen][host]") {
  const int64_t n = 10;
  auto out = makeBuffer("out", DType::I32, n);
  auto i = makeVar("i");
  Type i32 = Type::scalar(DType::I32);
  StmtPtr loop =
      forRange(i, n, ForKind::Serial,
               ifThen(lt(kir::ref(i), index(4)), store(out, kir::ref(i), intImm(10, i32)),
                      ifThen(eq(kir::ref(i), index(7)), store(out, kir::ref(i), intImm(70, i32)))));
  JitKernel kernel(Kernel{"branches", {out}, loop});
  AlignedVector<int32_t> result(n, -1);
  kernel({result.data()});
  CHECK(result == AlignedVector<int32_t>{10, 10, 10, 10, -1, -1, -1, 70, -1, -1});
}

TEST_CASE("kernels compile and run from several threads at once", "[codegen][host]") {
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  std::vector<int> ok(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &ok] {
      int64_t n = 500 + 31 * t;
      Kernel k = vectorAddKernel(n);
      k.name = fmt::format("vector_add_thread{}", t);
      auto module = codegen::compileHostModule(std::span(&k, 1), kiln::testing::hostTarget());
      if (!module)
        return;
      auto fn = (*module)->lookupKernel(k.name);
      AlignedVector<float> a(n), b(n), c(n);
      for (int64_t i = 0; i < n; ++i) {
        a[i] = static_cast<float>(i * t);
        b[i] = 1.0f;
      }
      bool all = true;
      for (int round = 0; round < 20; ++round) {
        void *args[] = {a.data(), b.data(), c.data()};
        fn(args);
        for (int64_t i = 0; i < n; ++i)
          all = all && c[i] == a[i] + 1.0f;
      }
      ok[t] = all ? 1 : 0;
    });
  }
  for (auto &thread : threads)
    thread.join();
  for (int t = 0; t < kThreads; ++t)
    CHECK(ok[t] == 1);
}

TEST_CASE("an in-place elementwise kernel (output aliases an input) is correct",
          "[codegen][host]") {
  // The executor may pass one buffer as both input and output; the backend
  // marks no parameter noalias, so vectorized code must still be right.
  const int64_t n = 1003;
  JitKernel kernel(vectorAddKernel(n));
  AlignedVector<float> a(n), b(n), expected(n);
  for (int64_t i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i) * 0.75f;
    b[i] = 3.0f - static_cast<float>(i % 17);
    expected[i] = a[i] + b[i];
  }
  kernel({a.data(), b.data(), a.data()});
  CHECK(a == expected);
}
