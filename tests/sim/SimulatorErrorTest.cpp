// Planted bugs the SIMT simulator must catch, each with a message that names
// the kernel, the buffer, the element and the threads at fault.
#include "SimTestUtil.h"

using namespace kiln;
using namespace kiln::kir;
using Catch::Matchers::Contains;
using kiln::test::GpuCoords;
using kiln::test::gpuKernel;

namespace {

ExprPtr f32(double v) { return floatImm(v, Type::scalar(DType::F32)); }
ExprPtr i32(int64_t v) { return intImm(v, Type::scalar(DType::I32)); }

ExprPtr globalX(const GpuCoords &c, int64_t blockDim) {
  return add(mul(c.block[0], index(blockDim)), c.thread[0]);
}

} // namespace

TEST_CASE("sim errors: a shared-memory race from a missing barrier", "[sim]") {
  const int64_t threads = 64;
  auto in = makeBuffer("in", DType::F32, threads), out = makeBuffer("out", DType::F32, threads);
  auto s = makeBuffer("tile", DType::F32, threads, MemScope::Shared);
  for (bool withBarrier : {false, true}) {
    Kernel kernel = gpuKernel("rotate", {in, out}, {1, 1, 1}, {threads, 1, 1}, {s},
                              [&](const GpuCoords &c) {
                                ExprPtr t = c.thread[0];
                                ExprPtr next = mod(add(t, index(1)), index(threads));
                                return seq({store(s, t, load(in, t)),
                                            withBarrier ? barrier() : nullptr,
                                            store(out, t, load(s, next))});
                              });
    std::vector<HostTensor> params = test::randomTensors(kernel, 1);
    if (withBarrier) {
      REQUIRE(sim::simulateKernel(kernel, params).has_value());
      auto x = params[0].as<float>(), z = params[1].as<float>();
      for (size_t t = 0; t < static_cast<size_t>(threads); ++t)
        REQUIRE(z[t] == x[(t + 1) % threads]);
      continue;
    }
    std::string message = test::simulationError(kernel, params);
    CHECK(message == "kernel rotate: read/write race on shared tile[1] in block (0,0,0): thread "
                     "(1,0,0) writes it and thread (0,0,0) reads it with no barrier between");
    // The race check can be switched off.
    sim::SimOptions unchecked;
    unchecked.checkSharedRaces = false;
    CHECK(sim::simulateKernel(kernel, params, unchecked).has_value());
  }
}

TEST_CASE("sim errors: write/write races and atomics against plain accesses", "[sim]") {
  auto out = makeBuffer("out", DType::I32, 64);
  auto s = makeBuffer("flag", DType::I32, 4, MemScope::Shared);
  SECTION("two threads store one element") {
    Kernel kernel = gpuKernel("ww", {out}, {2, 1, 1}, {64, 1, 1}, {s}, [&](const GpuCoords &c) {
      return seq({ifThen(lt(c.thread[0], index(4)), store(s, c.thread[0], i32(0))), barrier(),
                  ifThen(eq(c.thread[0], index(40)), store(s, index(2), i32(1))),
                  ifThen(eq(c.thread[0], index(7)), store(s, index(2), i32(2)))});
    });
    std::vector<HostTensor> params = test::randomTensors(kernel, 1);
    CHECK(test::simulationError(kernel, params) ==
          "kernel ww: write/write race on shared flag[2] in block (0,0,0): threads (40,0,0) and "
          "(7,0,0) both write it with no barrier between");
  }
  SECTION("an atomic and a plain read") {
    Kernel kernel = gpuKernel("ar", {out}, {1, 1, 1}, {64, 1, 1}, {s}, [&](const GpuCoords &c) {
      return seq({ifThen(lt(c.thread[0], index(4)), store(s, c.thread[0], i32(0))), barrier(),
                  atomic(AtomicOp::Add, s, index(1), i32(1)),
                  store(out, c.thread[0], load(s, index(1)))});
    });
    std::vector<HostTensor> params = test::randomTensors(kernel, 1);
    CHECK(test::simulationError(kernel, params) ==
          "kernel ar: read/write race on shared flag[1] in block (0,0,0): thread (1,0,0) updates "
          "it atomically and thread (0,0,0) reads it with no barrier between");
  }
  SECTION("a read, then a write by another thread") {
    Kernel kernel = gpuKernel("rw", {out}, {1, 1, 1}, {64, 1, 1}, {s}, [&](const GpuCoords &c) {
      ExprPtr t = c.thread[0];
      return seq({ifThen(lt(t, index(4)), store(s, t, i32(0))), barrier(),
                  ifThen(eq(t, index(9)), store(out, t, load(s, index(3)))),
                  ifThen(eq(t, index(3)), store(s, index(3), i32(5)))});
    });
    std::vector<HostTensor> params = test::randomTensors(kernel, 1);
    CHECK(test::simulationError(kernel, params) ==
          "kernel rw: read/write race on shared flag[3] in block (0,0,0): thread (9,0,0) reads it "
          "and thread (3,0,0) writes it with no barrier between");
  }
  SECTION("atomics do not race with each other, and one thread may read its own write") {
    Kernel kernel = gpuKernel("ok", {out}, {2, 1, 1}, {64, 1, 1}, {s}, [&](const GpuCoords &c) {
      ExprPtr t = c.thread[0];
      return seq({ifThen(lt(t, index(4)), store(s, t, i32(0))),
                  ifThen(lt(t, index(4)), store(out, t, load(s, t))), barrier(),
                  atomic(AtomicOp::Add, s, index(1), i32(1)),
                  atomic(AtomicOp::Max, s, index(2), cast(t, Type::scalar(DType::I32))), barrier(),
                  store(out, t, add(load(s, index(1)), load(s, index(2))))});
    });
    std::vector<HostTensor> params = test::randomTensors(kernel, 1);
    REQUIRE(sim::simulateKernel(kernel, params).has_value());
    for (int32_t v : params[0].as<int32_t>())
      CHECK(v == 64 + 63);
  }
}

TEST_CASE("sim errors: shared memory is fresh in every block", "[sim]") {
  // The allocation sits around the block loop: block 1 still may not read what block 0 wrote.
  auto out = makeBuffer("out", DType::F32, 64);
  auto s = makeBuffer("tile", DType::F32, 32, MemScope::Shared);
  auto bx = makeVar("bx"), tx = makeVar("tx");
  ExprPtr t = kir::ref(tx);
  StmtPtr body = seq({ifThen(eq(kir::ref(bx), index(0)), store(s, t, f32(1.0))), barrier(),
                      store(out, add(mul(kir::ref(bx), index(32)), t), load(s, t))});
  Kernel kernel{"fresh", {out},
                allocate(s, forRange(bx, 2, ForKind::BlockX, forRange(tx, 32, ForKind::ThreadX, body)))};
  std::vector<HostTensor> params = test::randomTensors(kernel, 1);
  CHECK(test::simulationError(kernel, params) ==
        "kernel fresh: read of shared tile[0], which no thread has written, by block (1,0,0) "
        "thread (0,0,0)");
  for (size_t i = 0; i < 32; ++i)
    CHECK(params[0].as<float>()[i] == 1.0f); // block 0 ran
}

TEST_CASE("sim errors: a read of a register the thread never wrote", "[sim]") {
  auto out = makeBuffer("out", DType::F32, 64);
  auto acc = makeBuffer("acc", DType::F32, 2, MemScope::Register);
  Kernel kernel = gpuKernel("noinit", {out}, {1, 1, 1}, {64, 1, 1}, {}, [&](const GpuCoords &c) {
    ExprPtr t = c.thread[0];
    return allocate(acc, seq({ifThen(ne(t, index(5)), store(acc, index(1), f32(0.0))),
                              store(out, t, load(acc, index(1)))}));
  });
  std::vector<HostTensor> params = test::randomTensors(kernel, 1);
  CHECK(test::simulationError(kernel, params) ==
        "kernel noinit: read of register acc[1], which no thread has written, by block (0,0,0) "
        "thread (5,0,0)");
}

TEST_CASE("sim errors: an out-of-bounds global store", "[sim]") {
  const int64_t n = 1000, threads = 128, blocks = 8; // no tail guard: 1024 threads
  auto a = makeBuffer("a", DType::F32, 1024), out = makeBuffer("out", DType::F32, n);
  Kernel kernel = gpuKernel("unguarded", {a, out}, {blocks, 1, 1}, {threads, 1, 1}, {},
                            [&](const GpuCoords &c) {
                              ExprPtr i = globalX(c, threads);
                              return store(out, i, load(a, i));
                            });
  std::vector<HostTensor> params = test::randomTensors(kernel, 1);
  CHECK(test::simulationError(kernel, params) ==
        "kernel unguarded: out-of-bounds store out[1000] (out has 1000 elements) by block "
        "(7,0,0) thread (104,0,0)");
}

TEST_CASE("sim errors: an out-of-bounds shared load", "[sim]") {
  auto out = makeBuffer("out", DType::F32, 64);
  auto s = makeBuffer("tile", DType::F32, 64, MemScope::Shared);
  Kernel kernel = gpuKernel("shifted", {out}, {2, 1, 1}, {64, 1, 1}, {s}, [&](const GpuCoords &c) {
    ExprPtr t = c.thread[0];
    return seq({store(s, t, f32(1.0)), barrier(), store(out, t, load(s, add(t, index(1))))});
  });
  std::vector<HostTensor> params = test::randomTensors(kernel, 1);
  CHECK(test::simulationError(kernel, params) ==
        "kernel shifted: out-of-bounds load tile[64] (tile has 64 elements) by block (0,0,0) "
        "thread (63,0,0)");
}

// The kernel-IR verifier refuses this kernel before it runs: its if depends on the thread index.
TEST_CASE("sim errors: a barrier inside a divergent if", "[sim]") {
  auto out = makeBuffer("out", DType::F32, 64);
  auto s = makeBuffer("tile", DType::F32, 64, MemScope::Shared);
  Kernel kernel = gpuKernel("divergent", {out}, {1, 1, 1}, {64, 1, 1}, {s}, [&](const GpuCoords &c) {
    ExprPtr t = c.thread[0];
    return ifThen(lt(t, index(16)),
                  seq({store(s, t, f32(2.0)), barrier(), store(out, t, load(s, t))}));
  });
  std::vector<HostTensor> params = test::randomTensors(kernel, 1);
  CHECK_THAT(test::simulationError(kernel, params),
             Catch::StartsWith("kernel divergent: a barrier under control flow that varies by "
                               "thread (`if ") &&
                 Catch::Contains("< 16`): every thread of the block must reach it, in `barrier`"));
}

TEST_CASE("sim errors: shuffles in a partial warp and in a divergent warp", "[sim]") {
  auto out = makeBuffer("out", DType::F32, 48);
  SECTION("a block of 48 threads") {
    Kernel kernel = gpuKernel("partial", {out}, {1, 1, 1}, {48, 1, 1}, {}, [&](const GpuCoords &c) {
      ExprPtr v = cast(c.thread[0], Type::scalar(DType::F32));
      return store(out, c.thread[0], shuffle(ShuffleMode::Down, v, i32(1)));
    });
    std::vector<HostTensor> params = test::randomTensors(kernel, 1);
    CHECK(test::simulationError(kernel, params) ==
          "kernel partial: a down shuffle in warp 1 of block (0,0,0), which has only 16 threads "
          "(the block's 48 threads are not a multiple of 32)");
  }
  SECTION("half a warp inside an if") {
    Kernel kernel = gpuKernel("halfwarp", {out}, {1, 1, 1}, {32, 1, 1}, {}, [&](const GpuCoords &c) {
      ExprPtr v = cast(c.thread[0], Type::scalar(DType::F32));
      return ifThen(ge(c.thread[0], index(8)),
                    store(out, c.thread[0], shuffle(ShuffleMode::Xor, v, i32(1))));
    });
    std::vector<HostTensor> params = test::randomTensors(kernel, 1);
    CHECK(test::simulationError(kernel, params) ==
          "kernel halfwarp: a xor shuffle reached by 24 of 32 lanes of warp 0 of block (0,0,0); "
          "thread (0,0,0) (lane 0) did not reach it");
  }
}

TEST_CASE("sim errors: a read of never-written shared memory", "[sim]") {
  auto out = makeBuffer("out", DType::F32, 64);
  auto s = makeBuffer("tile", DType::F32, 64, MemScope::Shared);
  Kernel kernel = gpuKernel("uninit", {out}, {3, 1, 1}, {64, 1, 1}, {s}, [&](const GpuCoords &c) {
    ExprPtr t = c.thread[0];
    return seq({ifThen(lt(t, index(32)), store(s, t, f32(1.0))), barrier(),
                store(out, t, load(s, t))});
  });
  std::vector<HostTensor> params = test::randomTensors(kernel, 1);
  CHECK(test::simulationError(kernel, params) ==
        "kernel uninit: read of shared tile[32], which no thread has written, by block (0,0,0) "
        "thread (32,0,0)");
}

TEST_CASE("sim errors: a misaligned vector access", "[sim]") {
  auto a = makeBuffer("a", DType::F32, 4 * 64 + 4), out = makeBuffer("out", DType::F32, 4 * 64);
  Kernel kernel = gpuKernel("misaligned", {a, out}, {1, 1, 1}, {64, 1, 1}, {}, [&](const GpuCoords &c) {
    ExprPtr t4 = mul(c.thread[0], index(4));
    return store(out, t4, load(a, add(t4, index(2)), 4));
  });
  std::vector<HostTensor> params = test::randomTensors(kernel, 1);
  CHECK(test::simulationError(kernel, params) ==
        "kernel misaligned: misaligned 4-lane load a[2] by block (0,0,0) thread (0,0,0): a vector "
        "access of global memory must start at a multiple of 4");
}

TEST_CASE("sim errors: a runaway loop stops at maxStepsPerBlock", "[sim]") {
  auto out = makeBuffer("out", DType::I64, 32);
  Kernel kernel = gpuKernel("runaway", {out}, {2, 1, 1}, {32, 1, 1}, {}, [&](const GpuCoords &c) {
    auto k = makeVar("k");
    return forRange(k, 1000000, ForKind::Serial, store(out, c.thread[0], kir::ref(k)));
  });
  std::vector<HostTensor> params = test::randomTensors(kernel, 1);
  sim::SimOptions options;
  options.maxStepsPerBlock = 500;
  CHECK(test::simulationError(kernel, params, options) ==
        "kernel runaway: block (0,0,0) ran more than 500 statements "
        "(SimOptions::maxStepsPerBlock): a runaway loop?");
}

TEST_CASE("sim errors: bad parameters and kernels that are not GPU kernels", "[sim]") {
  auto a = makeBuffer("a", DType::F32, 16);
  Kernel kernel = gpuKernel("k", {a}, {1, 1, 1}, {16, 1, 1}, {}, [&](const GpuCoords &c) {
    return store(a, c.thread[0], f32(1.0));
  });
  std::vector<HostTensor> wrongSize{HostTensor(DType::F32, {15})};
  CHECK(test::simulationError(kernel, wrongSize) ==
        "kernel k: parameter a is f32[16], got a tensor f32[15]");
  std::vector<std::byte> short60(60);
  std::vector<std::span<std::byte>> raw{short60};
  auto rawResult = sim::simulateKernel(kernel, std::span<const std::span<std::byte>>(raw));
  REQUIRE_FALSE(rawResult.has_value());
  CHECK(rawResult.error().message() == "kernel k: parameter a (f32[16]) needs 64 bytes, got 60");
  std::vector<HostTensor> none;
  CHECK(test::simulationError(kernel, none) == "kernel k: takes 1 buffers, got 0");

  SECTION("a block larger than maxThreadsPerBlock") {
    auto big = makeBuffer("big", DType::F32, 2048);
    Kernel huge = gpuKernel("huge", {big}, {1, 1, 1}, {2048, 1, 1}, {}, [&](const GpuCoords &c) {
      return store(big, c.thread[0], f32(3.0));
    });
    std::vector<HostTensor> params{HostTensor(DType::F32, {2048})};
    auto result = sim::simulateKernel(huge, params);
    REQUIRE_FALSE(result.has_value());
    CHECK(result.error().code() == ErrorCode::VerifyError);
    CHECK_THAT(result.error().message(),
               Catch::StartsWith("kernel huge: ") && Contains("2048 threads"));
    sim::SimOptions options;
    options.maxThreadsPerBlock = 2048;
    REQUIRE(sim::simulateKernel(huge, params, options).has_value());
    CHECK(params[0].getDouble(2047) == 3.0);
  }
  SECTION("a shuffle outside the thread loops") {
    auto v = makeVar("v", Type::scalar(DType::F32)), tx = makeVar("tx");
    Kernel outside{"outside", {a},
                   let(v, shuffle(ShuffleMode::Xor, f32(1.0), i32(1)),
                       forRange(tx, 16, ForKind::ThreadX, store(a, kir::ref(tx), kir::ref(v))))};
    std::vector<HostTensor> params{HostTensor(DType::F32, {16})};
    auto result = sim::simulateKernel(outside, params);
    REQUIRE_FALSE(result.has_value());
    CHECK(result.error().code() == ErrorCode::VerifyError);
    CHECK(result.error().message() == "kernel outside: a warp shuffle outside the thread loops, "
                                      "in `let v: f32 = shuffle_xor(1.0f32, 1i32)`");
  }
  auto i = makeVar("i");
  Kernel host{"host", {a}, forRange(i, 16, ForKind::Serial, store(a, kir::ref(i), f32(0.0)))};
  std::vector<HostTensor> params{HostTensor(DType::F32, {16})};
  auto result = sim::simulateKernel(host, params);
  REQUIRE_FALSE(result.has_value());
  CHECK(result.error().code() == ErrorCode::VerifyError);
  CHECK_THAT(result.error().message(), Catch::StartsWith("kernel host: "));
}
