// The SIMT simulator on hand-written GPU kernels: results against values
// computed in C++ and, for kernels without cross-thread operations, bit for
// bit against the kernel IR evaluator.
#include "SimTestUtil.h"

#include <algorithm>
#include <numeric>

using namespace kiln;
using namespace kiln::kir;
using kiln::test::GpuCoords;
using kiln::test::gpuKernel;

namespace {

ExprPtr f32(double v) { return floatImm(v, Type::scalar(DType::F32)); }
ExprPtr i32(int64_t v) { return intImm(v, Type::scalar(DType::I32)); }

/// blockIdx.x * blockDim.x + threadIdx.x
ExprPtr globalX(const GpuCoords &c, int64_t blockDim) {
  return add(mul(c.block[0], index(blockDim)), c.thread[0]);
}

} // namespace

TEST_CASE("sim: vector add over a grid with a tail guard", "[sim]") {
  for (int64_t n : {1000, 1024, 37}) {
    const int64_t threads = 128, blocks = (n + threads - 1) / threads;
    auto a = makeBuffer("a", DType::F32, n), b = makeBuffer("b", DType::F32, n);
    auto out = makeBuffer("out", DType::F32, n);
    Kernel kernel = gpuKernel("vadd", {a, b, out}, {blocks, 1, 1}, {threads, 1, 1}, {},
                              [&](const GpuCoords &c) {
                                auto i = makeVar("i");
                                return let(i, globalX(c, threads),
                                           ifThen(lt(kir::ref(i), index(n)),
                                                  store(out, kir::ref(i),
                                                        add(load(a, kir::ref(i)), load(b, kir::ref(i))))));
                              });
    std::vector<HostTensor> params = test::randomTensors(kernel, 5);
    auto stats = sim::simulateKernel(kernel, params);
    REQUIRE(stats.has_value());
    CHECK(stats->blocks == blocks);
    CHECK(stats->threadsPerBlock == threads);
    CHECK(stats->globalLoads == 2 * n);
    CHECK(stats->globalStores == n);
    auto x = params[0].as<float>(), y = params[1].as<float>(), z = params[2].as<float>();
    for (int64_t i = 0; i < n; ++i)
      REQUIRE(z[static_cast<size_t>(i)] == x[static_cast<size_t>(i)] + y[static_cast<size_t>(i)]);
    test::requireMatchesEvaluator(kernel);
  }
}

TEST_CASE("sim: f32x4 vector loads and stores", "[sim]") {
  const int64_t n = 4 * 200, threads = 64, blocks = 4; // 256 threads, 200 do work
  auto a = makeBuffer("a", DType::F32, n), out = makeBuffer("out", DType::F32, n);
  Kernel kernel = gpuKernel(
      "vec4", {a, out}, {blocks, 1, 1}, {threads, 1, 1}, {}, [&](const GpuCoords &c) {
        auto i = makeVar("i");
        ExprPtr x = load(a, mul(kir::ref(i), index(4)), 4);
        ExprPtr y = add(mul(x, broadcast(f32(3.0), 4)), broadcast(f32(0.5), 4));
        return let(i, globalX(c, threads),
                   ifThen(lt(kir::ref(i), index(n / 4)), store(out, mul(kir::ref(i), index(4)), y)));
      });
  std::vector<HostTensor> params = test::randomTensors(kernel, 7);
  auto stats = sim::simulateKernel(kernel, params);
  REQUIRE(stats.has_value());
  CHECK(stats->globalLoads == n);
  auto x = params[0].as<float>(), z = params[1].as<float>();
  for (size_t i = 0; i < static_cast<size_t>(n); ++i)
    REQUIRE(z[i] == x[i] * 3.0f + 0.5f);
  test::requireMatchesEvaluator(kernel);
}

/// One block of `threads` threads sums its slice of `in` through shared memory
/// with a tree of barriers; thread 0 writes the block's sum.
Kernel blockSumKernel(int64_t n, int64_t threads, int64_t blocks) {
  auto in = makeBuffer("in", DType::F32, n), out = makeBuffer("out", DType::F32, blocks);
  auto s = makeBuffer("partial", DType::F32, threads, MemScope::Shared);
  return gpuKernel("block_sum", {in, out}, {blocks, 1, 1}, {threads, 1, 1}, {s},
                   [&](const GpuCoords &c) {
                     auto i = makeVar("i");
                     ExprPtr t = c.thread[0];
                     std::vector<StmtPtr> steps;
                     steps.push_back(store(s, t, load(in, kir::ref(i), 1, lt(kir::ref(i), index(n)))));
                     steps.push_back(barrier());
                     for (int64_t stride = threads / 2; stride >= 1; stride /= 2) {
                       steps.push_back(ifThen(
                           lt(t, index(stride)),
                           store(s, t, add(load(s, t), load(s, add(t, index(stride)))))));
                       steps.push_back(barrier());
                     }
                     steps.push_back(ifThen(eq(t, index(0)), store(out, c.block[0], load(s, index(0)))));
                     return let(i, globalX(c, threads), seq(steps));
                   });
}

TEST_CASE("sim: block sum reduction through shared memory and barriers", "[sim]") {
  const int64_t threads = 128, n = 1000, blocks = 8;
  Kernel kernel = blockSumKernel(n, threads, blocks);
  std::vector<HostTensor> params = test::randomTensors(kernel, 3);
  auto stats = sim::simulateKernel(kernel, params);
  REQUIRE(stats.has_value());
  CHECK(stats->barriers == blocks * 8); // log2(128) + 1 per block
  CHECK(stats->sharedBytesPerBlock == threads * 4);
  auto x = params[0].as<float>(), sums = params[1].as<float>();
  for (int64_t b = 0; b < blocks; ++b) {
    // The same tree in C++, so the float sums agree exactly.
    std::vector<float> tree(static_cast<size_t>(threads));
    for (int64_t t = 0; t < threads; ++t) {
      int64_t i = b * threads + t;
      tree[static_cast<size_t>(t)] = i < n ? x[static_cast<size_t>(i)] : 0.0f;
    }
    for (int64_t stride = threads / 2; stride >= 1; stride /= 2)
      for (int64_t t = 0; t < stride; ++t)
        tree[static_cast<size_t>(t)] += tree[static_cast<size_t>(t + stride)];
    REQUIRE(sums[static_cast<size_t>(b)] == tree[0]);
  }
}

TEST_CASE("sim: warp shuffle reductions (xor and down) and an idx broadcast", "[sim]") {
  const int64_t threads = 64, blocks = 3, n = threads * blocks;
  for (ShuffleMode mode : {ShuffleMode::Xor, ShuffleMode::Down}) {
    auto in = makeBuffer("in", DType::F32, n), out = makeBuffer("out", DType::F32, n);
    Kernel kernel = gpuKernel(
        "warp_sum", {in, out}, {blocks, 1, 1}, {threads, 1, 1}, {}, [&](const GpuCoords &c) {
          auto i = makeVar("i");
          std::vector<VarPtr> v;
          for (int k = 0; k <= 5; ++k)
            v.push_back(makeVar("v" + std::to_string(k), Type::scalar(DType::F32)));
          // Innermost first: the last partial sum is stored by every lane.
          StmtPtr body = store(out, kir::ref(i), kir::ref(v[5]));
          for (int k = 5; k >= 1; --k) {
            int64_t offset = int64_t{16} >> (k - 1);
            body = let(v[static_cast<size_t>(k)],
                       add(kir::ref(v[static_cast<size_t>(k - 1)]),
                           shuffle(mode, kir::ref(v[static_cast<size_t>(k - 1)]), i32(offset))),
                       body);
          }
          return let(i, globalX(c, threads), let(v[0], load(in, kir::ref(i)), body));
        });
    std::vector<HostTensor> params = test::randomTensors(kernel, 9);
    auto stats = sim::simulateKernel(kernel, params);
    REQUIRE(stats.has_value());
    CHECK(stats->shuffles == 5 * n / 32);
    auto x = params[0].as<float>(), z = params[1].as<float>();
    for (int64_t warp = 0; warp < n / 32; ++warp) {
      std::vector<float> v(x.begin() + warp * 32, x.begin() + warp * 32 + 32);
      for (int offset = 16; offset >= 1; offset /= 2) {
        std::vector<float> next(32);
        for (int lane = 0; lane < 32; ++lane) {
          int source = mode == ShuffleMode::Xor ? lane ^ offset : lane + offset;
          next[static_cast<size_t>(lane)] =
              v[static_cast<size_t>(lane)] + v[static_cast<size_t>(source < 32 ? source : lane)];
        }
        v = next;
      }
      for (int lane = 0; lane < 32; ++lane)
        REQUIRE(z[static_cast<size_t>(warp * 32 + lane)] == v[static_cast<size_t>(lane)]);
      if (mode == ShuffleMode::Xor) // every lane holds the whole sum
        CHECK(v[31] == v[0]);
    }
  }
  SECTION("idx broadcasts one lane and rotates by a per-thread lane; up shifts") {
    auto in = makeBuffer("in", DType::I32, n), out = makeBuffer("out", DType::I32, 3 * n);
    Kernel kernel = gpuKernel(
        "warp_bcast", {in, out}, {blocks, 1, 1}, {threads, 1, 1}, {}, [&](const GpuCoords &c) {
          auto i = makeVar("i");
          auto v = makeVar("v", Type::scalar(DType::I32));
          ExprPtr nextLane =
              cast(mod(add(c.thread[0], index(1)), index(32)), Type::scalar(DType::I32));
          return let(i, globalX(c, threads),
                     let(v, load(in, kir::ref(i)),
                         seq({store(out, kir::ref(i), shuffle(ShuffleMode::Idx, kir::ref(v), i32(37))),
                              store(out, add(kir::ref(i), index(n)),
                                    shuffle(ShuffleMode::Idx, kir::ref(v), nextLane)),
                              store(out, add(kir::ref(i), index(2 * n)),
                                    shuffle(ShuffleMode::Up, kir::ref(v), i32(3)))})));
        });
    std::vector<HostTensor> params = test::randomTensors(kernel, 4);
    REQUIRE(sim::simulateKernel(kernel, params).has_value());
    auto x = params[0].as<int32_t>(), z = params[1].as<int32_t>();
    for (int64_t t = 0; t < n; ++t) {
      int64_t warpBase = t / 32 * 32;
      REQUIRE(z[static_cast<size_t>(t)] == x[static_cast<size_t>(warpBase + 5)]); // 37 & 31
      REQUIRE(z[static_cast<size_t>(n + t)] == x[static_cast<size_t>(warpBase + (t + 1) % 32)]);
      int64_t lane = t % 32; // below lane 0 a thread keeps its own value
      REQUIRE(z[static_cast<size_t>(2 * n + t)] == x[static_cast<size_t>(lane >= 3 ? t - 3 : t)]);
    }
  }
}

TEST_CASE("sim: atomics from every thread of several blocks", "[sim]") {
  const int64_t threads = 96, blocks = 7, total = threads * blocks;
  auto counters = makeBuffer("counters", DType::I64, 3);
  auto hist = makeBuffer("hist", DType::I32, 8);
  auto in = makeBuffer("in", DType::I32, total);
  auto floatSum = makeBuffer("float_sum", DType::F32, 1);
  auto smallest = makeBuffer("smallest", DType::I32, 1);
  auto local = makeBuffer("local_hist", DType::I32, 8, MemScope::Shared);
  Kernel kernel = gpuKernel(
      "atomics", {in, counters, hist, floatSum, smallest}, {blocks, 1, 1}, {threads, 1, 1}, {local},
      [&](const GpuCoords &c) {
        auto i = makeVar("i");
        ExprPtr t = c.thread[0];
        ExprPtr bucket = cast(mod(load(in, kir::ref(i)), intImm(8, Type::scalar(DType::I32))),
                              Type::index());
        bucket = select(lt(bucket, index(0)), add(bucket, index(8)), bucket);
        return let(
            i, globalX(c, threads),
            seq({atomic(AtomicOp::Add, floatSum, index(0),
                        div(cast(load(in, kir::ref(i)), Type::scalar(DType::F32)), f32(7.0))),
                 atomic(AtomicOp::Min, smallest, index(0), load(in, kir::ref(i))),
                 atomic(AtomicOp::Add, counters, index(0), intImm(1, Type::index())),
                 atomic(AtomicOp::Add, counters, index(1), kir::ref(i)),
                 atomic(AtomicOp::Max, counters, index(2), kir::ref(i)),
                 ifThen(lt(t, index(8)), store(local, t, i32(0))), barrier(),
                 atomic(AtomicOp::Add, local, bucket, i32(1)), barrier(),
                 ifThen(lt(t, index(8)), atomic(AtomicOp::Add, hist, t, load(local, t)))}));
      });
  std::vector<HostTensor> params = test::randomTensors(kernel, 21);
  std::ranges::fill(params[1].as<int64_t>(), 0);
  std::ranges::fill(params[2].as<int32_t>(), 0);
  params[3].as<float>()[0] = 0.0f;
  params[4].as<int32_t>()[0] = 1 << 30;
  auto stats = sim::simulateKernel(kernel, params);
  REQUIRE(stats.has_value());
  CHECK(stats->atomics == 6 * total + 8 * blocks);
  CHECK(stats->sharedStores == 8 * blocks + total); // the zero fill and the shared atomics
  CHECK(stats->sharedLoads == 8 * blocks);
  CHECK(stats->barriers == 2 * blocks);
  auto c = params[1].as<int64_t>();
  CHECK(c[0] == total);
  CHECK(c[1] == total * (total - 1) / 2);
  CHECK(c[2] == total - 1);
  std::vector<int32_t> expected(8, 0);
  for (int32_t v : params[0].as<int32_t>())
    ++expected[static_cast<size_t>(((v % 8) + 8) % 8)];
  auto h = params[2].as<int32_t>();
  CHECK(std::vector<int32_t>(h.begin(), h.end()) == expected);
  // Float atomics land in linear thread order, blocks in order: the sum is exact.
  float sum = 0.0f;
  int32_t least = 1 << 30;
  for (int32_t v : params[0].as<int32_t>()) {
    sum += static_cast<float>(v) / 7.0f;
    least = std::min(least, v);
  }
  CHECK(params[3].as<float>()[0] == sum);
  CHECK(params[4].as<int32_t>()[0] == least);
}

TEST_CASE("sim: thread.y/thread.z and block.y layouts", "[sim]") {
  const std::array<int64_t, 3> grid{3, 2, 1}, block{8, 4, 2};
  const int64_t n = 3 * 2 * 8 * 4 * 2;
  auto out = makeBuffer("out", DType::I64, n);
  auto in = makeBuffer("in", DType::I64, n);
  Kernel kernel = gpuKernel("layout", {in, out}, grid, block, {}, [&](const GpuCoords &c) {
    // Linear: ((by * 3 + bx) * 64 + (tz * 32 + ty * 8 + tx)).
    ExprPtr blockLinear = add(mul(c.block[1], index(3)), c.block[0]);
    ExprPtr threadLinear =
        add(add(mul(c.thread[2], index(32)), mul(c.thread[1], index(8))), c.thread[0]);
    ExprPtr i = add(mul(blockLinear, index(64)), threadLinear);
    ExprPtr code = add(add(mul(c.block[0], index(100000)), mul(c.block[1], index(10000))),
                       add(add(mul(c.thread[0], index(100)), mul(c.thread[1], index(10))),
                           c.thread[2]));
    return store(out, i, add(code, mul(load(in, i), index(1000000))));
  });
  std::vector<HostTensor> params = test::randomTensors(kernel, 2);
  REQUIRE(sim::simulateKernel(kernel, params).has_value());
  auto x = params[0].as<int64_t>(), z = params[1].as<int64_t>();
  for (int64_t by = 0; by < 2; ++by)
    for (int64_t bx = 0; bx < 3; ++bx)
      for (int64_t tz = 0; tz < 2; ++tz)
        for (int64_t ty = 0; ty < 4; ++ty)
          for (int64_t tx = 0; tx < 8; ++tx) {
            auto i = static_cast<size_t>((by * 3 + bx) * 64 + tz * 32 + ty * 8 + tx);
            REQUIRE(z[i] == bx * 100000 + by * 10000 + tx * 100 + ty * 10 + tz + x[i] * 1000000);
          }
  test::requireMatchesEvaluator(kernel);
}

TEST_CASE("sim: per-thread loops with different trip counts and a register accumulator",
          "[sim]") {
  const int64_t threads = 40, blocks = 3, width = 7;
  const int64_t n = threads * blocks;
  // Every host loop kind runs serially inside a thread.
  ForKind kind = GENERATE(ForKind::Serial, ForKind::Unrolled, ForKind::Vectorized,
                          ForKind::Parallel);
  auto in = makeBuffer("in", DType::F32, n * width), out = makeBuffer("out", DType::F32, n);
  auto acc = makeBuffer("acc", DType::F32, 1, MemScope::Register);
  Kernel kernel = gpuKernel(
      "ragged", {in, out}, {blocks, 1, 1}, {threads, 1, 1}, {}, [&](const GpuCoords &c) {
        auto i = makeVar("i"), k = makeVar("k");
        // Thread i sums in[i * width + k] for k in [i % 3, i % 3 + i % 5).
        ExprPtr begin = mod(kir::ref(i), index(3)), extent = mod(kir::ref(i), index(5));
        return let(
            i, globalX(c, threads),
            allocate(acc, seq({store(acc, index(0), f32(0.0)),
                               forLoop(k, begin, extent, kind,
                                       store(acc, index(0),
                                             add(load(acc, index(0)),
                                                 load(in, add(mul(kir::ref(i), index(width)),
                                                              kir::ref(k)))))),
                               store(out, kir::ref(i), load(acc, index(0)))})));
      });
  std::vector<HostTensor> params = test::randomTensors(kernel, 8);
  REQUIRE(sim::simulateKernel(kernel, params).has_value());
  auto x = params[0].as<float>(), z = params[1].as<float>();
  for (int64_t i = 0; i < n; ++i) {
    float sum = 0.0f;
    for (int64_t k = i % 3; k < i % 3 + i % 5; ++k)
      sum += x[static_cast<size_t>(i * width + k)];
    REQUIRE(z[static_cast<size_t>(i)] == sum);
  }
  test::requireMatchesEvaluator(kernel);
}

TEST_CASE("sim: divergent ifs with else branches", "[sim]") {
  const int64_t threads = 64, blocks = 5, n = threads * blocks - 11;
  auto in = makeBuffer("in", DType::I32, n), out = makeBuffer("out", DType::I32, n);
  Kernel kernel = gpuKernel(
      "branches", {in, out}, {blocks, 1, 1}, {threads, 1, 1}, {}, [&](const GpuCoords &c) {
        auto i = makeVar("i"), v = makeVar("v", Type::scalar(DType::I32));
        ExprPtr x = kir::ref(v);
        StmtPtr inner = ifThen(gt(x, i32(0)), store(out, kir::ref(i), mul(x, i32(3))),
                               ifThen(eq(mod(x, i32(2)), i32(0)), store(out, kir::ref(i), i32(-7)),
                                      store(out, kir::ref(i), sub(x, i32(1)))));
        return let(i, globalX(c, threads),
                   ifThen(lt(kir::ref(i), index(n)),
                          let(v, load(in, kir::ref(i)),
                              ifThen(eq(mod(kir::ref(i), index(3)), index(0)),
                                     store(out, kir::ref(i), add(x, i32(1000))), inner))));
      });
  std::vector<HostTensor> params = test::randomTensors(kernel, 6);
  REQUIRE(sim::simulateKernel(kernel, params).has_value());
  auto x = params[0].as<int32_t>(), z = params[1].as<int32_t>();
  for (int64_t i = 0; i < n; ++i) {
    int32_t v = x[static_cast<size_t>(i)];
    int32_t expected = i % 3 == 0 ? v + 1000 : v > 0 ? v * 3 : v % 2 == 0 ? -7 : v - 1;
    REQUIRE(z[static_cast<size_t>(i)] == expected);
  }
  test::requireMatchesEvaluator(kernel);
}

TEST_CASE("sim: f16 and bf16 buffers through casts", "[sim]") {
  const int64_t threads = 32, blocks = 5, n = 150;
  auto in = makeBuffer("in", DType::F16, n), out = makeBuffer("out", DType::BF16, n);
  auto halves = makeBuffer("halves", DType::F16, n);
  Kernel kernel = gpuKernel(
      "narrow", {in, out, halves}, {blocks, 1, 1}, {threads, 1, 1}, {}, [&](const GpuCoords &c) {
        auto i = makeVar("i");
        ExprPtr x = cast(load(in, kir::ref(i)), Type::scalar(DType::F32));
        ExprPtr y = add(mul(x, f32(2.5)), f32(1.0));
        return let(i, globalX(c, threads),
                   ifThen(lt(kir::ref(i), index(n)),
                          seq({store(out, kir::ref(i), cast(y, Type::scalar(DType::BF16))),
                               store(halves, kir::ref(i), cast(y, Type::scalar(DType::F16)))})));
      });
  std::vector<HostTensor> params = test::randomTensors(kernel, 10);
  REQUIRE(sim::simulateKernel(kernel, params).has_value());
  for (int64_t i = 0; i < n; ++i) {
    float y = static_cast<float>(params[0].getDouble(i)) * 2.5f + 1.0f;
    REQUIRE(params[1].getDouble(i) == roundToDType(y, DType::BF16));
    REQUIRE(params[2].getDouble(i) == roundToDType(y, DType::F16));
  }
  test::requireMatchesEvaluator(kernel);
}

TEST_CASE("sim: per-lane predicated vector loads and stores", "[sim]") {
  const int64_t threads = 32, blocks = 3, n = 4 * threads * blocks;
  auto a = makeBuffer("a", DType::F32, n), keep = makeBuffer("keep", DType::F32, n);
  auto out = makeBuffer("out", DType::F32, n);
  Kernel kernel = gpuKernel(
      "masked", {a, keep, out}, {blocks, 1, 1}, {threads, 1, 1}, {}, [&](const GpuCoords &c) {
        auto i = makeVar("i");
        ExprPtr mask = gt(load(keep, kir::ref(i), 4), broadcast(f32(0.0), 4));
        ExprPtr x = load(a, kir::ref(i), 4, mask);
        return let(i, mul(globalX(c, threads), index(4)),
                   store(out, kir::ref(i), add(x, broadcast(f32(1.0), 4)), mask));
      });
  std::vector<HostTensor> params = test::randomTensors(kernel, 14);
  std::vector<float> before(params[2].as<float>().begin(), params[2].as<float>().end());
  auto stats = sim::simulateKernel(kernel, params);
  REQUIRE(stats.has_value());
  auto x = params[0].as<float>(), k = params[1].as<float>(), z = params[2].as<float>();
  int64_t kept = 0;
  for (size_t i = 0; i < static_cast<size_t>(n); ++i) {
    kept += k[i] > 0;
    REQUIRE(z[i] == (k[i] > 0 ? x[i] + 1.0f : before[i]));
  }
  CHECK(stats->globalStores == kept);
  // The mask is one expression used twice (load and store predicate): each use
  // evaluates it, as in the evaluator, so `keep` is read twice.
  CHECK(stats->globalLoads == 2 * n + kept);
  test::requireMatchesEvaluator(kernel);
}
