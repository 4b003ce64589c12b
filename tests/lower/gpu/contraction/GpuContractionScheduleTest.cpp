// GPU contraction schedules and kernel structure: the heuristic default, the schedule space
// (every member run on two groups), errors naming the field of an illegal schedule, and the
// shape of the kernel IR (launch, shared tiles, barriers per K step, a register tile at
// constant indices, vector loads only where aligned).
#include "lower/gpu/contraction/GpuContractionTestUtil.h"

#include "ir/kernel/Visitor.h"

#include <fmt/format.h>

#include <set>

using namespace kiln;
using namespace kiln::test;
using ir::OpKind;

namespace {

/// What the structure tests count in a kernel.
struct KernelCensus : kir::IRVisitor {
  int barriers = 0, barriersInKLoop = 0, fmas = 0;
  int registerAccesses = 0, registerAccessesAtConstants = 0;
  int globalVectorLoads = 0, sharedVectorStores = 0;
  int64_t registerElements = 0;
  int kLoopDepth = 0;

  void visitFor(const kir::For &node) override {
    bool kLoop = node.var->name.ends_with("_kt");
    kLoopDepth += kLoop;
    kir::IRVisitor::visitFor(node);
    kLoopDepth -= kLoop;
  }
  void visitBarrier(const kir::Barrier &) override {
    ++barriers;
    barriersInKLoop += kLoopDepth > 0;
  }
  void visitAllocate(const kir::Allocate &node) override {
    if (node.buffer->scope == kir::MemScope::Register)
      registerElements += node.buffer->size;
    kir::IRVisitor::visitAllocate(node);
  }
  void countRegister(const kir::BufferPtr &buffer, const kir::ExprPtr &index) {
    if (buffer->scope != kir::MemScope::Register)
      return;
    ++registerAccesses;
    registerAccessesAtConstants += kir::constIntValue(index).has_value();
  }
  void visitStore(const kir::Store &node) override {
    countRegister(node.buffer, node.index);
    if (node.buffer->scope == kir::MemScope::Shared && node.value->type().lanes > 1)
      ++sharedVectorStores;
    kir::IRVisitor::visitStore(node);
  }
  void visitLoad(const kir::Load &node) override {
    countRegister(node.buffer, node.index);
    if (node.buffer->scope == kir::MemScope::Global && node.type().lanes > 1)
      ++globalVectorLoads;
    kir::IRVisitor::visitLoad(node);
  }
  void visitCall(const kir::Call &node) override {
    fmas += node.fn == kir::Intrinsic::Fma;
    kir::IRVisitor::visitCall(node);
  }
};

KernelCensus census(const kir::Kernel &kernel) {
  KernelCensus c;
  c.kir::StmtVisitor::visit(kernel.body);
  return c;
}

/// x[m, k] @ w[k, n] + bias, relu: an epilogue that reads another input.
void buildDense(GraphCase &c, int64_t m, int64_t n, int64_t k) {
  ir::Value *x = c.input("x", DType::F32, {m, k});
  ir::Value *w = c.input("w", DType::F32, {k, n});
  ir::Value *bias = c.input("bias", DType::F32, {n});
  ir::Value *mm = c.node(OpKind::MatMul, {x, w}, matmulAttrs());
  c.output(c.node(OpKind::Relu, {c.node(OpKind::Add, {mm, bias})}));
}

/// x[m, k] @ w[k, n] (or the transposed operands) with `schedule` on the simulator.
void checkGpuMatMul(int64_t m, int64_t n, int64_t k, const lower::Schedule &schedule,
                    DType dtype = DType::F32, DType accumulate = DType::F32,
                    bool transposeA = false, bool transposeB = false) {
  INFO(fmt::format("{} x {} x {} {} accumulate {} transposes {}{}", m, n, k, dtypeName(dtype),
                   dtypeName(accumulate), transposeA, transposeB));
  GraphCase c(11);
  buildMatMul(c, m, n, k, dtype, accumulate, transposeA, transposeB);
  checkGpuContraction(c, k, accumulate, schedule);
}

} // namespace

TEST_CASE("gpu contraction: tiles larger and smaller than the problem",
          "[lower][gpu-contraction]") {
  AssemblyBatch assembly; // every GPU kernel below through both backends and ptxas
  for (const lower::GpuMatMulSchedule &s :
       {gpuGemm(128, 128, 32, 8, 8, 1), gpuGemm(128, 64, 16, 8, 4, 2),
        gpuGemm(32, 128, 8, 4, 8, 2), gpuGemm(64, 32, 32, 4, 2, 2), gpuGemm(32, 32, 8, 8, 8, 1)}) {
    checkGpuMatMul(7, 9, 5, s);
    checkGpuMatMul(65, 33, 47, s);
    checkGpuMatMul(64, 64, 16, s); // exact multiples of some tiles: the unguarded paths
  }
}

TEST_CASE("gpu contraction: split-K on CUDA cores", "[lower][gpu-contraction][split-k]") {
  AssemblyBatch assembly; // every GPU kernel below through both backends and ptxas
  auto split = [](lower::GpuMatMulSchedule s, int splits) {
    s.splitK = splits;
    return s;
  };
  // K = 203 is 26 tiles of 8: 2 splits of 13, 3 of 9 (the last 8), 5 of 6 (the last 2), with
  // double buffering and without; f64 and integer accumulators sum their partials exactly.
  for (int stages : {1, 2})
    for (int splits : {2, 3, 5})
      checkGpuMatMul(33, 19, 203, split(smallTiles(stages), splits));
  checkGpuMatMul(17, 9, 130, split(smallTiles(2), 4), DType::F64, DType::F64, true, true);
  checkGpuMatMul(20, 24, 96, split(smallTiles(2), 3), DType::I8, DType::I32);
  // The default splits a narrow output over a long K (a few tiles on 132 SMs).
  GraphCase c;
  ir::Value *x = c.input("x", DType::F32, {9, 4096});
  ir::Value *w = c.input("w", DType::F32, {4096, 24});
  c.output(c.node(OpKind::MatMul, {x, w}, matmulAttrs()));
  PlannedContraction planned = planContraction(c.graph());
  lower::GpuMatMulSchedule d =
      gemmOf(lower::defaultSchedule(c.graph(), *planned.group, gpuTestTarget()));
  INFO(lower::scheduleStr(d));
  CHECK(d.splitK > 1);
  checkGpuContraction(c, 4096, DType::F32);
}

TEST_CASE("gpu contraction: structure of the kernel", "[lower][gpu-contraction]") {
  AssemblyBatch assembly; // every GPU kernel below through both backends and ptxas
  for (int stages : {1, 2}) {
    INFO("stages " << stages);
    GraphCase c;
    buildDense(c, 64, 32, 48);
    PlannedContraction planned = planContraction(c.graph());
    lower::GpuMatMulSchedule s = gpuGemm(32, 32, 16, 4, 2, stages);
    lower::LoweredKernel lowered = lowerGpuContraction(c, *planned.group, s);
    auto launch = kir::gpuLaunchOf(lowered.kernel);
    REQUIRE(launch);
    CHECK(launch->grid == std::array<int64_t, 3>{1, 2, 1}); // N tiles, M tiles, batch
    CHECK(launch->block == std::array<int64_t, 3>{128, 1, 1}); // (32/4) * (32/2)
    CHECK(launch->sharedBytes == int64_t(stages) * 16 * (32 + 32) * 4);
    KernelCensus k = census(lowered.kernel);
    // One barrier per K step with double buffering (plus the prologue's), two with one stage.
    CHECK(k.barriersInKLoop == (stages == 2 ? 1 : 2));
    CHECK(k.barriers == 2);
    // A 4 x 2 register tile touched only at constant indices: 8 fused multiply-adds per k.
    CHECK(k.registerElements == 8);
    CHECK(k.registerAccesses > 0);
    CHECK(k.registerAccessesAtConstants == k.registerAccesses);
    CHECK(k.fmas == 8);
    // K = 48 and N = 32 are multiples of 4: both operands load 16-byte vectors.
    CHECK(k.globalVectorLoads == (stages == 2 ? 2 : 1) * 2);
    CHECK(k.sharedVectorStores > 0);
    checkGpuContraction(c, 48, DType::F32, s);
  }
}

TEST_CASE("gpu contraction: no vector loads where alignment is not provable",
          "[lower][gpu-contraction]") {
  AssemblyBatch assembly; // every GPU kernel below through both backends and ptxas
  GraphCase c;
  buildDense(c, 33, 30, 47); // K odd (A rows unaligned), N = 30 not a multiple of 4
  PlannedContraction planned = planContraction(c.graph());
  lower::GpuMatMulSchedule s = gpuGemm(32, 32, 16, 4, 4, 2);
  KernelCensus k = census(lowerGpuContraction(c, *planned.group, s).kernel);
  CHECK(k.globalVectorLoads == 0);
  checkGpuContraction(c, 47, DType::F32, s);
  // N = 30 is even: two-lane vectors of B (16 x 32 / 2 = 256 per tile over 64 threads).
  s.vectorWidth = 2;
  KernelCensus two = census(lowerGpuContraction(c, *planned.group, s).kernel);
  CHECK(two.globalVectorLoads == 8); // 4 per thread per tile, prologue and loop
  checkGpuContraction(c, 47, DType::F32, s);
}

TEST_CASE("gpu contraction: batches on grid z", "[lower][gpu-contraction]") {
  AssemblyBatch assembly; // every GPU kernel below through both backends and ptxas
  GraphCase c;
  ir::Value *a = c.input("a", DType::F32, {3, 20, 9});
  ir::Value *b = c.input("b", DType::F32, {3, 9, 40});
  c.output(c.node(OpKind::MatMul, {a, b}, matmulAttrs()));
  PlannedContraction planned = planContraction(c.graph());
  lower::LoweredKernel lowered =
      lowerGpuContraction(c, *planned.group, gpuGemm(32, 32, 8, 2, 2, 2));
  auto launch = kir::gpuLaunchOf(lowered.kernel);
  REQUIRE(launch);
  CHECK(launch->grid == std::array<int64_t, 3>{2, 1, 3});
}

TEST_CASE("gpu contraction: the default schedule", "[lower][gpu-contraction]") {
  AssemblyBatch assembly; // every GPU kernel below through both backends and ptxas
  const codegen::GpuTarget &target = gpuTestTarget();
  for (lower::GemmShape shape :
       {lower::GemmShape{1, 4096, 4096, 4096, DType::F32}, lower::GemmShape{1, 512, 512, 512},
        lower::GemmShape{8, 128, 1024, 64}, lower::GemmShape{1, 7, 9, 5},
        lower::GemmShape{64, 1, 784, 9}, lower::GemmShape{1, 1000, 1000, 1000, DType::F64},
        lower::GemmShape{1, 300, 300, 300, DType::I32}}) {
    INFO(fmt::format("{} x {} x {} x {} {}", shape.batch, shape.m, shape.n, shape.k,
                     dtypeName(shape.accumulate)));
    lower::GpuMatMulSchedule s = lower::defaultGpuGemmSchedule(shape, target);
    INFO(lower::scheduleStr(lower::Schedule{s}));
    CHECK(lower::checkGpuGemmSchedule(s, shape.accumulate, target));
    CHECK(lower::gpuGemmThreads(s) >= 32);
    CHECK(lower::gpuGemmThreads(s) <= 256);
    CHECK(s.splitK == 1);
    CHECK(s.stages == (shape.k > s.blockK ? 2 : 1));
  }
  // Large problems take the largest tiles; a single output channel per GEMM (a narrow group)
  // a 16-row tile; 512^3 keeps at least one block per SM busy.
  CHECK(lower::defaultGpuGemmSchedule({1, 4096, 4096, 4096}, target).blockM == 128);
  CHECK(lower::defaultGpuGemmSchedule({1, 4096, 4096, 4096}, target).blockN == 128);
  CHECK(lower::defaultGpuGemmSchedule({64, 1, 784, 9}, target).blockM == 16);
  lower::GpuMatMulSchedule mid = lower::defaultGpuGemmSchedule({1, 512, 512, 512}, target);
  CHECK(lower::ceilDiv(512, mid.blockM) * lower::ceilDiv(512, mid.blockN) >= target.numSms / 2);
  // f64 halves the vector lanes (16 bytes).
  CHECK(lower::defaultGpuGemmSchedule({1, 100, 100, 100, DType::F64}, target).vectorWidth == 2);
}

TEST_CASE("gpu contraction: illegal schedules name the field", "[lower][gpu-contraction]") {
  AssemblyBatch assembly; // every GPU kernel below through both backends and ptxas
  GraphCase c;
  buildDense(c, 17, 19, 23);
  PlannedContraction planned = planContraction(c.graph());
  struct Bad {
    lower::GpuMatMulSchedule schedule;
    std::string field;
  };
  lower::GpuMatMulSchedule splitK = gpuGemm(32, 32, 8, 2, 2, 2);
  splitK.splitK = 17;
  lower::GpuMatMulSchedule emptySplit = gpuGemm(32, 32, 8, 2, 2, 2);
  emptySplit.splitK = 4; // K = 23 is 3 tiles of 8
  lower::GpuMatMulSchedule vector = gpuGemm(32, 32, 8, 2, 2, 2, 3);
  lower::GpuMatMulSchedule zero = gpuGemm(32, 32, 0, 2, 2, 2);
  for (const Bad &bad : {Bad{gpuGemm(32, 32, 8, 3, 2, 2), "threadM"},
                         Bad{gpuGemm(32, 30, 8, 2, 4, 2), "threadN"},
                         Bad{gpuGemm(128, 128, 8, 2, 2, 2), "threads"},
                         Bad{gpuGemm(128, 128, 32, 8, 8, 2), "shared memory"},
                         Bad{gpuGemm(64, 64, 8, 16, 16, 1), "accumulator registers"},
                         Bad{gpuGemm(32, 32, 8, 2, 2, 3), "stages"}, Bad{splitK, "splitK"},
                         Bad{emptySplit, "without K tiles"},
                         Bad{vector, "vectorWidth"}, Bad{zero, "blockK"}}) {
    auto lowered =
        lower::lowerGroup(c.graph(), *planned.group, bad.schedule, gpuTestTarget());
    REQUIRE_FALSE(lowered);
    INFO(lowered.error().str());
    CHECK(lowered.error().code() == ErrorCode::InvalidArgument);
    CHECK_THAT(lowered.error().str(), Catch::Contains(bad.field));
  }
  // A CPU schedule is not a GPU one.
  auto cpu = lower::lowerGroup(c.graph(), *planned.group, lower::MatMulSchedule{},
                               gpuTestTarget());
  REQUIRE_FALSE(cpu);
  CHECK(cpu.error().code() == ErrorCode::InvalidArgument);
  CHECK_THAT(cpu.error().str(), Catch::Contains(fmt::format("group {} (", planned.group->id)) &&
                                    Catch::Contains("a GPU matmul needs a GpuMatMulSchedule"));
  // Nor is a conv2d's GPU schedule a matmul's.
  auto conv = lower::lowerGroup(c.graph(), *planned.group,
                                lower::GpuConv2DSchedule{gpuGemm(32, 32, 8, 2, 2, 2)},
                                gpuTestTarget());
  REQUIRE_FALSE(conv);
  CHECK_THAT(conv.error().str(), Catch::Contains("a GPU matmul needs a GpuMatMulSchedule"));
}

TEST_CASE("gpu contraction: every schedule of the space, on two groups",
          "[lower][gpu-contraction]") {
  AssemblyBatch assembly; // every GPU kernel below through both backends and ptxas
  GraphCase dense(9);
  buildDense(dense, 19, 23, 21);
  GraphCase conv(4);
  ConvParams p;
  p.layout = "nhwc";
  p.padding = {1, 1, 1, 1};
  p.stride = {2, 1};
  ir::Value *x = conv.input("x", DType::F32, {2, 7, 6, 3});
  ir::Value *w = conv.input("w", DType::F32, {5, 3, 3, 3});
  conv.output(conv.node(OpKind::Conv2D, {x, w}, p.attrs()));
  for (auto [c, k] : {std::pair<GraphCase *, int64_t>{&dense, 21}, {&conv, 27}}) {
    PlannedContraction planned = planContraction(c->graph());
    std::vector<lower::Schedule> space =
        lower::scheduleSpace(c->graph(), *planned.group, gpuTestTarget());
    REQUIRE(space.size() > 50);
    CHECK(lower::scheduleStr(space.front()) ==
          lower::scheduleStr(
              lower::defaultSchedule(c->graph(), *planned.group, gpuTestTarget())));
    std::set<std::string> seen;
    std::set<int> blockKs, stages, threadTiles;
    for (const lower::Schedule &s : space) {
      CHECK(seen.insert(lower::scheduleStr(s)).second); // no duplicates
      lower::GpuMatMulSchedule g = gemmOf(s);
      blockKs.insert(g.blockK);
      stages.insert(g.stages);
      threadTiles.insert(g.threadM);
      checkGpuContraction(*c, k, DType::F32, s);
    }
    CHECK(blockKs == std::set<int>{8, 16, 32});
    CHECK(stages == std::set<int>{1, 2});
    CHECK(threadTiles == std::set<int>{2, 4, 8});
  }
}
