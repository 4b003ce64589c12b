// The GPU parts of the kernel IR: printing of barriers, atomics, shuffles, mma,
// ldmatrix and async copies, the launch shape read off block/thread loops and
// the structure errors, the evaluator's refusal of cross-thread operations,
// and the kernel passes leaving collectives and barrier-ordered loads where
// they are.
#include "ir/kernel/GpuLaunch.h"
#include "ir/kernel/KernelTestUtil.h"
#include "passes/kernel/Passes.h"

using namespace kiln;
using namespace kiln::kir;
using namespace kiln::test;

namespace {

Type f32() { return Type::scalar(DType::F32); }
Type i32() { return Type::scalar(DType::I32); }

/// out[b] = sum of x[b*64 .. b*64+63]: a shared-memory tree sum per block, the
/// last warp finished with shuffles, and an atomic count of blocks.
Kernel blockSumKernel() {
  auto x = makeBuffer("x", DType::F32, 256);
  auto out = makeBuffer("out", DType::F32, 4);
  auto count = makeBuffer("count", DType::I32, 1);
  auto partial = makeBuffer("partial", DType::F32, 64, MemScope::Shared);
  auto b = makeVar("b"), t = makeVar("t");
  ExprPtr tid = kir::ref(t);
  StmtPtr stage = seq({
      store(partial, tid, load(x, add(mul(kir::ref(b), index(64)), tid))),
      barrier(),
      ifThen(lt(tid, index(32)),
             store(partial, tid, add(load(partial, tid), load(partial, add(tid, index(32)))))),
      barrier(),
  });
  auto v = makeVar("v", f32());
  ExprPtr lane = cast(tid, i32());
  StmtPtr finish = ifThen(
      lt(tid, index(32)),
      let(v, add(load(partial, tid), shuffle(ShuffleMode::Down, load(partial, tid), intImm(16, i32()))),
          seq({ifThen(eq(tid, index(0)), store(out, kir::ref(b), kir::ref(v))),
               ifThen(eq(lane, intImm(0, i32())),
                      atomic(AtomicOp::Add, count, index(0), intImm(1, i32())))})));
  StmtPtr threads = forRange(t, 64, ForKind::ThreadX, seq({stage, finish}));
  return Kernel{"block_sum", {x, out, count},
                forRange(b, 4, ForKind::BlockX, allocate(partial, threads))};
}

} // namespace

TEST_CASE("GPU kernels print barriers, atomics and shuffles", "[kernel][gpu]") {
  std::string text = printKernel(blockSumKernel());
  CHECK(text.find("for b in [0, 4) block.x {\n    alloc partial: f32[64] shared\n"
                  "    for t in [0, 64) thread.x {") != std::string::npos);
  CHECK(text.find("      barrier\n") != std::string::npos);
  CHECK(text.find("shuffle_down(load f32 partial[t], 16i32)") != std::string::npos);
  CHECK(text.find("atomic add i32 count[0] <- 1i32") != std::string::npos);
  CHECK(printExpr(shuffle(ShuffleMode::Xor, floatImm(1.5, f32()), intImm(3, i32()))) ==
        "shuffle_xor(1.5f32, 3i32)");
  CHECK(printExpr(shuffle(ShuffleMode::Idx, intImm(7, Type::index()), intImm(0, i32()))) ==
        "shuffle_idx(7, 0i32)");
}

TEST_CASE("gpuLaunchOf reads grid, block and shared memory", "[kernel][gpu]") {
  Kernel kernel = blockSumKernel();
  CHECK(isGpuKernel(kernel));
  auto launch = gpuLaunchOf(kernel);
  REQUIRE(launch.has_value());
  CHECK(launch->grid == std::array<int64_t, 3>{4, 1, 1});
  CHECK(launch->block == std::array<int64_t, 3>{64, 1, 1});
  CHECK(launch->sharedBytes == 256);
  CHECK(launch->threadsPerBlock() == 64);
  CHECK(launch->blockVars[0]->name == "b");
  CHECK(launch->threadVars[0]->name == "t");
  CHECK(launch->threadVars[1] == nullptr);

  // A 2-D block under a 2-D grid.
  auto out = makeBuffer("out", DType::F32, 64 * 6);
  auto bx = makeVar("bx"), by = makeVar("by"), tx = makeVar("tx"), ty = makeVar("ty");
  ExprPtr flat = add(mul(add(mul(kir::ref(by), index(2)), kir::ref(bx)), index(32)),
                     add(mul(kir::ref(ty), index(8)), kir::ref(tx)));
  Kernel twoD{"two_d", {out},
              forRange(by, 3, ForKind::BlockY,
                       forRange(bx, 2, ForKind::BlockX,
                                forRange(ty, 4, ForKind::ThreadY,
                                         forRange(tx, 8, ForKind::ThreadX,
                                                  store(out, flat, floatImm(1, f32()))))))};
  auto launch2 = gpuLaunchOf(twoD);
  REQUIRE(launch2.has_value());
  CHECK(launch2->grid == std::array<int64_t, 3>{2, 3, 1});
  CHECK(launch2->block == std::array<int64_t, 3>{8, 4, 1});
  CHECK(launch2->sharedBytes == 0);
}

TEST_CASE("gpuLaunchOf rejects kernels that break the CUDA structure", "[kernel][gpu]") {
  auto out = makeBuffer("out", DType::F32, 64);
  auto shared = makeBuffer("tile", DType::F32, 64, MemScope::Shared);
  auto local = makeBuffer("acc", DType::F32, 4, MemScope::Local);
  auto b = makeVar("b"), t = makeVar("t"), n = makeVar("n"), s = makeVar("s");
  StmtPtr write = store(out, kir::ref(t), floatImm(0, f32()));
  auto errorOf = [](const Kernel &kernel) {
    auto launch = gpuLaunchOf(kernel, 1024);
    REQUIRE_FALSE(launch.has_value());
    CHECK(launch.error().code() == ErrorCode::VerifyError);
    return launch.error().message();
  };
  CHECK(errorOf(Kernel{"no_threads", {out}, forRange(b, 4, ForKind::BlockX, write)}) ==
        "GPU kernel no_threads has a store outside its thread loops (a GPU kernel runs its body "
        "in a thread.* loop nest)");
  CHECK(errorOf(Kernel{"serial_outside", {out},
                       forRange(s, 2, ForKind::Serial, forRange(t, 64, ForKind::ThreadX, write))}) ==
        "GPU kernel serial_outside has a serial loop 's' outside its thread loops");
  CHECK(errorOf(Kernel{"dynamic", {out},
                       let(n, index(64),
                           forLoop(t, index(0), kir::ref(n), ForKind::ThreadX, write))}) ==
        "GPU kernel dynamic binds loop 't' to thread.x with bounds that are not [0, constant >= 1)");
  CHECK(errorOf(Kernel{"shared_inside", {out},
                       forRange(t, 64, ForKind::ThreadX, allocate(shared, write))}) ==
        "GPU kernel shared_inside allocates shared buffer tile inside its thread loops");
  CHECK(errorOf(Kernel{"local_outside", {out},
                       allocate(local, forRange(t, 64, ForKind::ThreadX, write))}) ==
        "GPU kernel local_outside allocates local buffer acc outside its thread loops (only "
        "shared buffers live per block)");
  CHECK(errorOf(Kernel{"twice", {out},
                       forRange(b, 2, ForKind::BlockX,
                                forRange(s, 2, ForKind::BlockX,
                                         forRange(t, 64, ForKind::ThreadX, write)))}) ==
        "GPU kernel twice binds two loops to block.x");
  CHECK(errorOf(Kernel{"two_nests", {out},
                       seq({forRange(t, 32, ForKind::ThreadX, write),
                            forRange(s, 32, ForKind::ThreadX, write)})}) ==
        "GPU kernel two_nests has statements beside its thread loop nest (a block runs one "
        "thread nest)");
  CHECK(errorOf(Kernel{"nested_thread", {out},
                       forRange(t, 64, ForKind::ThreadX,
                                forRange(s, 2, ForKind::Serial,
                                         forRange(n, 2, ForKind::ThreadY, write)))}) ==
        "GPU kernel nested_thread has a thread.y loop 'n' inside its thread loops");
  auto tooBig = gpuLaunchOf(Kernel{"too_big", {out}, forRange(t, 2048, ForKind::ThreadX, write)});
  REQUIRE_FALSE(tooBig.has_value());
  CHECK(tooBig.error().message() ==
        "GPU kernel too_big has blocks of 2048 threads; at most 1024 are allowed");
  CHECK_FALSE(isGpuKernel(Kernel{"host", {out}, forRange(s, 64, ForKind::Serial,
                                                         store(out, kir::ref(s), floatImm(0, f32())))}));
}

TEST_CASE("The evaluator refuses cross-thread operations", "[kernel][gpu]") {
  Kernel kernel = blockSumKernel();
  auto params = randomParams(kernel, 7);
  auto result = evaluateKernel(kernel, params);
  REQUIRE_FALSE(result.has_value());
  CHECK(result.error().code() == ErrorCode::Unsupported);
  CHECK(result.error().message() ==
        "kernel block_sum: `barrier` needs the threads of a block to run together: run the "
        "kernel on the SIMT simulator (runtime/sim)");
}

TEST_CASE("Builders check the GPU nodes' operand types", "[kernel][gpu]") {
  auto counts = makeBuffer("counts", DType::I32, 4);
  auto sums = makeBuffer("sums", DType::F32, 4);
  // Valid forms build.
  CHECK(atomic(AtomicOp::Max, counts, index(1), intImm(3, i32()))->kind() == StmtKind::Atomic);
  CHECK(atomic(AtomicOp::Add, sums, index(1), floatImm(3, f32()))->kind() == StmtKind::Atomic);
  CHECK(barrier()->kind() == StmtKind::Barrier);
  CHECK(shuffle(ShuffleMode::Up, floatImm(2, Type::scalar(DType::F64)), intImm(1, i32()))
            ->type() == Type::scalar(DType::F64));
}

TEST_CASE("Kernel passes keep shuffles and barrier-ordered loads in place", "[kernel][gpu]") {
  // Inside a serial loop of each thread: a let of a shuffle whose operands do
  // not change in the loop, and a load of a shared buffer the loop does not
  // store but that other threads fill before the barrier in the loop.
  auto in = makeBuffer("in", DType::F32, 64);
  auto out = makeBuffer("out", DType::F32, 64);
  auto tile = makeBuffer("tile", DType::F32, 64, MemScope::Shared);
  auto t = makeVar("t"), k = makeVar("k");
  auto sum = makeVar("sum", f32()), fromTile = makeVar("from_tile", f32());
  ExprPtr tid = kir::ref(t);
  StmtPtr loopBody = seq({
      let(sum, shuffle(ShuffleMode::Xor, load(in, tid), intImm(1, i32())),
          store(out, tid, add(load(out, tid), kir::ref(sum)))),
      barrier(),
      let(fromTile, load(tile, index(0)), store(out, tid, add(load(out, tid), kir::ref(fromTile)))),
  });
  Kernel kernel{"collectives", {in, out},
                allocate(tile, forRange(t, 64, ForKind::ThreadX,
                                        forRange(k, 4, ForKind::Serial, loopBody)))};
  Kernel optimized = runKernelPasses(kernel);
  std::string text = printKernel(optimized);
  INFO(text);
  size_t loop = text.find("for k in [0, 4) serial");
  REQUIRE(loop != std::string::npos);
  // Both lets are still inside the k loop.
  CHECK(text.find("shuffle_xor(", loop) != std::string::npos);
  CHECK(text.find("load f32 tile[0]", loop) != std::string::npos);
  CHECK(text.find("barrier", loop) != std::string::npos);
  REQUIRE(gpuLaunchOf(optimized).has_value());
}

TEST_CASE("GPU kernels print tensor-core statements and async copies", "[kernel][gpu]") {
  auto fa = makeBuffer("fa", DType::BF16, 8, MemScope::Register);
  auto fb = makeBuffer("fb", DType::BF16, 4, MemScope::Register);
  auto acc = makeBuffer("acc", DType::F32, 8, MemScope::Register);
  auto tile = makeBuffer("tile", DType::BF16, 256, MemScope::Shared);
  auto stage = makeBuffer("stage", DType::F32, 512, MemScope::Shared);
  auto in = makeBuffer("in", DType::F32, 4096);
  auto lane = makeVar("lane");
  ExprPtr l = kir::ref(lane);
  CHECK(printStmt(mma(MmaKind::BF16_M16N8K16, {acc, 4}, {fa, 0}, {fb, 0}, {acc, 4})) ==
        "mma mmaKind=bf16.m16n8k16, d=acc[4:], a=fa[0:], b=fb[0:], c=acc[4:]\n");
  CHECK(printStmt(ldMatrix({fa, 0}, 4, false, tile, mul(l, index(8)))) ==
        "ldmatrix destination=fa[0:], matrices=4, transpose=false, source=tile, "
        "rowIndex=lane * 8\n");
  CHECK(printStmt(ldMatrix({fb, 2}, 1, true, tile, index(16))) ==
        "ldmatrix destination=fb[2:], matrices=1, transpose=true, source=tile, rowIndex=16\n");
  CHECK(printStmt(asyncCopy(stage, mul(l, index(4)), in, add(mul(l, index(4)), index(128)), 4)) ==
        "async_copy destination=stage, destinationIndex=lane * 4, source=in, "
        "sourceIndex=lane * 4 + 128, lanes=4\n");
  CHECK(printStmt(asyncCopy(stage, index(0), in, index(4), 1, lt(l, index(3)))) ==
        "async_copy destination=stage, destinationIndex=0, source=in, sourceIndex=4, lanes=1, "
        "predicate=lane < 3\n");
  CHECK(printStmt(asyncCommit()) == "async_commit\n");
  CHECK(printStmt(asyncWait(1)) == "async_wait pendingGroups=1\n");
  auto ef = makeBuffer("ef", DType::F8E4M3, 16, MemScope::Register);
  auto eb = makeBuffer("eb", DType::F8E4M3, 8, MemScope::Register);
  auto tf = makeBuffer("tf", DType::F32, 4, MemScope::Register);
  CHECK(printStmt(mma(MmaKind::E4M3_M16N8K32, {acc, 0}, {ef, 0}, {eb, 0}, {acc, 4})) ==
        "mma mmaKind=e4m3.m16n8k32, d=acc[0:], a=ef[0:], b=eb[0:], c=acc[4:]\n");
  CHECK(printStmt(mma(MmaKind::TF32_M16N8K8, {acc, 0}, {tf, 0}, {tf, 2}, {acc, 0})) ==
        "mma mmaKind=tf32.m16n8k8, d=acc[0:], a=tf[0:], b=tf[2:], c=acc[0:]\n");
}
