// GPU schedules and kernel structure: every schedule of each kind's space
// computes the reference's result on the simulator, defaults follow the
// heuristics (vector width from the widest buffer, threads per row from the
// row length), illegal schedules are errors naming the field, and kernels have
// the structure their kind promises (16-byte vectors, a padded shared tile
// behind a barrier, warp shuffles, shared memory only across warps).
#include "lower/gpu/GpuLoweringTestUtil.h"

#include "ir/kernel/Visitor.h"

#include <map>
#include <set>

namespace kiln::test {
namespace {

using ir::OpKind;
using Ints = std::vector<int64_t>;

/// What a kernel contains, for structure checks.
struct KernelCensus : kir::IRVisitor {
  std::map<std::string, int> vectorLoadLanes, vectorStoreLanes; ///< widest per global buffer
  int shuffles = 0, barriers = 0;
  std::vector<kir::BufferPtr> shared;

  void visitLoad(const kir::Load &node) override {
    if (node.buffer->scope == kir::MemScope::Global)
      vectorLoadLanes[node.buffer->name] = std::max(vectorLoadLanes[node.buffer->name], node.type().lanes);
    kir::IRVisitor::visitLoad(node);
  }
  void visitStore(const kir::Store &node) override {
    if (node.buffer->scope == kir::MemScope::Global)
      vectorStoreLanes[node.buffer->name] = std::max(vectorStoreLanes[node.buffer->name], node.value->type().lanes);
    kir::IRVisitor::visitStore(node);
  }
  void visitShuffle(const kir::Shuffle &node) override {
    ++shuffles;
    kir::IRVisitor::visitShuffle(node);
  }
  void visitBarrier(const kir::Barrier &) override { ++barriers; }
  void visitAllocate(const kir::Allocate &node) override {
    if (node.buffer->scope == kir::MemScope::Shared)
      shared.push_back(node.buffer);
    kir::IRVisitor::visitAllocate(node);
  }
};

/// The single kernel group of `c`'s graph and its lowering with `schedule` (default when empty).
struct OneGroup {
  passes::FusionGroup group;
  lower::Schedule schedule;
  lower::LoweredKernel lowered;
  KernelCensus census;
  kir::GpuLaunch launch;
};

OneGroup lowerOnly(LoweringCase &c, std::optional<lower::Schedule> schedule = std::nullopt) {
  auto plan = passes::planFusion(c.graph());
  REQUIRE(plan);
  std::vector<passes::FusionGroup> kernels;
  for (const passes::FusionGroup &group : plan->groups)
    if (group.kind != passes::GroupKind::Constant && group.kind != passes::GroupKind::Alias)
      kernels.push_back(group);
  REQUIRE(kernels.size() == 1);
  OneGroup one{kernels[0], {}, {}, {}, {}};
  codegen::GpuTarget target = testGpuTarget();
  one.schedule = schedule ? *schedule : lower::defaultSchedule(c.graph(), one.group, target);
  auto lowered = lower::lowerGroup(c.graph(), one.group, one.schedule, target);
  INFO((lowered ? std::string() : lowered.error().str()));
  REQUIRE(lowered);
  one.lowered = std::move(*lowered);
  one.census.StmtVisitor::visit(one.lowered.kernel.body);
  auto launch = kir::gpuLaunchOf(one.lowered.kernel, target.maxThreadsPerBlock);
  REQUIRE(launch);
  one.launch = *launch;
  return one;
}

TEST_CASE("GPU: every pointwise and transpose schedule computes the same result", "[gpu-lower][schedule]") {
  AssemblyBatch assembly; // every GPU kernel below through both backends and ptxas
  LoweringCase c(1);
  ir::Value *x = c.input("x", DType::F32, {37, 41});
  ir::Value *y = c.input("y", DType::F32, {37, 41});
  c.output(c.node(OpKind::Mul, {c.node(OpKind::Add, {x, y}), c.node(OpKind::Sigmoid, {x})}));
  CHECK(checkEveryGpuSchedule(c) >= 6);

  LoweringCase t(2);
  ir::Value *a = t.input("a", DType::F16, {45, 70});
  t.output(t.node(OpKind::Relu, {t.node(OpKind::Transpose, {a}, {{"perm", Ints{1, 0}}})}));
  CHECK(checkEveryGpuSchedule(t) >= 9);

  LoweringCase b(3);
  ir::Value *m = b.input("m", DType::BF16, {9, 64});
  ir::Value *v = b.input("v", DType::BF16, {64});
  b.output(b.node(OpKind::Add, {m, v}));
  checkEveryGpuSchedule(b);
}

TEST_CASE("GPU: every reduction and row-norm schedule computes the same result", "[gpu-lower][schedule]") {
  AssemblyBatch assembly; // every GPU kernel below through both backends and ptxas
  LoweringCase r(4);
  ir::Value *x = r.input("x", DType::F32, {6, 300});
  r.output(r.node(OpKind::ReduceSum, {x}, {{"axes", Ints{1}}, {"keepdims", false}}));
  CHECK(checkEveryGpuSchedule(r) >= 8);

  LoweringCase a(5);
  ir::Value *y = a.input("y", DType::F32, {5, 77}, -2, 2);
  a.output(a.node(OpKind::ArgMax, {y}, {{"axis", 1}, {"keepdims", false}}));
  checkEveryGpuSchedule(a);

  // Ties between vectors of one thread and across threads: the first index must win.
  LoweringCase t(51);
  ir::Value *ties = t.input("ties", DType::I32, {5, 80}, -3, 3);
  t.output(t.node(OpKind::ArgMin, {ties}, {{"axis", 1}, {"keepdims", false}}));
  t.output(t.node(OpKind::ReduceProd, {ties}, {{"axes", Ints{1}}, {"keepdims", true}}));
  checkEveryGpuSchedule(t);

  LoweringCase o(6);
  ir::Value *z = o.input("z", DType::F16, {40, 3, 50});
  o.output(o.node(OpKind::ReduceMax, {z}, {{"axes", Ints{0}}, {"keepdims", false}}));
  CHECK(checkEveryGpuSchedule(o) >= 3);

  LoweringCase s(7);
  ir::Value *w = s.input("w", DType::F32, {6, 200}, -5, 5);
  s.output(s.node(OpKind::Softmax, {w}, {{"axis", -1}}));
  checkEveryGpuSchedule(s);

  LoweringCase l(8);
  ir::Value *u = l.input("u", DType::F32, {5, 3, 40});
  ir::Value *scale = l.input("scale", DType::F32, {3, 40});
  ir::Value *bias = l.input("bias", DType::F32, {3, 40});
  l.output(l.node(OpKind::LayerNorm, {u, scale, bias}, {{"axis", 1}, {"epsilon", 1e-5}}));
  checkEveryGpuSchedule(l);

  LoweringCase p(9);
  ir::Value *img = p.input("img", DType::F32, {2, 7, 9, 3});
  p.output(p.node(OpKind::MaxPool2D, {img}, {{"kernel", Ints{3, 3}}, {"stride", Ints{2, 2}},
                                             {"padding", Ints{1, 1, 1, 1}}, {"layout", std::string("nhwc")}}));
  CHECK(checkEveryGpuSchedule(p) >= 3);
}

TEST_CASE("GPU schedule spaces start with the default and hold no duplicates", "[gpu-lower][schedule]") {
  AssemblyBatch assembly; // every GPU kernel below through both backends and ptxas
  LoweringCase c(10);
  ir::Value *x = c.input("x", DType::F32, {16, 1000});
  c.output(c.node(OpKind::LogSoftmax, {x}, {{"axis", -1}}));
  auto plan = passes::planFusion(c.graph());
  REQUIRE(plan);
  codegen::GpuTarget target = testGpuTarget();
  for (const passes::FusionGroup &group : plan->groups) {
    std::vector<lower::Schedule> space = lower::scheduleSpace(c.graph(), group, target);
    REQUIRE(!space.empty());
    CHECK(lower::scheduleStr(space[0]) == lower::scheduleStr(lower::defaultSchedule(c.graph(), group, target)));
    std::set<std::string> seen;
    for (const lower::Schedule &s : space)
      CHECK(seen.insert(lower::scheduleStr(s)).second);
  }
}

TEST_CASE("GPU default schedules follow the row length and the widest buffer", "[gpu-lower][schedule]") {
  AssemblyBatch assembly; // every GPU kernel below through both backends and ptxas
  codegen::GpuTarget target = testGpuTarget();
  struct RowCase {
    int64_t rows, length, threadsPerRow;
  };
  // A thread per element up to a warp, a warp up to 512, more warps beyond.
  for (RowCase k : {RowCase{1000, 3, 4}, RowCase{1000, 31, 32}, RowCase{10, 100, 32},
                    RowCase{10, 1000, 128}, RowCase{4, 10000, 256}}) {
    INFO(k.rows << " rows of " << k.length);
    LoweringCase c(11);
    ir::Value *x = c.input("x", DType::F32, {k.rows, k.length});
    c.output(c.node(OpKind::ReduceMin, {x}, {{"axes", Ints{1}}, {"keepdims", false}}));
    OneGroup one = lowerOnly(c);
    auto *s = std::get_if<lower::GpuReductionSchedule>(&one.schedule);
    REQUIRE(s != nullptr);
    CHECK(s->threadsPerBlock / s->rowsPerBlock == k.threadsPerRow);
    CHECK(one.launch.block[0] == k.threadsPerRow);
    CHECK(one.launch.threadsPerBlock() <= 256);
    // Rows that shuffle fill whole warps.
    CHECK((k.threadsPerRow == 1 || one.launch.threadsPerBlock() % 32 == 0));
    // Shuffles whenever a row has several threads; shared memory only across warps.
    CHECK((one.census.shuffles > 0) == (k.threadsPerRow > 1));
    CHECK((one.launch.sharedBytes > 0) == (k.threadsPerRow > 32));
    CHECK((one.census.barriers > 0) == (k.threadsPerRow > 32));
  }
  for (auto [dtype, lanes] : {std::pair{DType::F32, 4}, std::pair{DType::F16, 8}, std::pair{DType::F64, 2},
                              std::pair{DType::I8, 8}}) {
    INFO(dtypeName(dtype));
    LoweringCase c(12);
    ir::Value *x = c.input("x", dtype, {1000}, -3, 3);
    ir::Value *y = c.input("y", dtype, {1000}, -3, 3);
    c.output(c.node(OpKind::Max, {x, y}));
    OneGroup one = lowerOnly(c);
    auto *s = std::get_if<lower::GpuPointwiseSchedule>(&one.schedule);
    REQUIRE(s != nullptr);
    CHECK(s->vectorWidth == lanes);
    CHECK(s->vectorWidth * dtypeByteSize(dtype) <= 16);
    // Same-shape inputs arrive by vector loads and the output leaves by vector stores.
    CHECK(one.census.vectorLoadLanes["in0"] == lanes);
    CHECK(one.census.vectorLoadLanes["in1"] == lanes);
    CHECK(one.census.vectorStoreLanes["out"] == lanes);
    CHECK(one.launch.numBlocks() <= int64_t{target.numSms} * s->maxBlocksPerSm);
    checkGpu(c);
  }
}

TEST_CASE("GPU inner reductions of long rows read 16-byte vectors", "[gpu-lower][schedule]") {
  AssemblyBatch assembly; // every GPU kernel below through both backends and ptxas
  for (DType dtype : {DType::F32, DType::F16, DType::BF16}) {
    INFO(dtypeName(dtype));
    LoweringCase c(52);
    ir::Value *x = c.input("x", dtype, {3, 4096});
    ir::Value *bias = c.input("bias", dtype, {4096});
    c.output(c.node(OpKind::ReduceMean, {c.node(OpKind::Mul, {x, bias})}, {{"axes", Ints{1}}, {"keepdims", false}}));
    OneGroup one = lowerOnly(c);
    auto *s = std::get_if<lower::GpuReductionSchedule>(&one.schedule);
    REQUIRE(s != nullptr);
    int lanes = 16 / dtypeByteSize(dtype);
    CHECK(s->vectorWidth == lanes);
    CHECK(one.census.vectorLoadLanes["in0"] == lanes);
    CHECK(one.census.vectorLoadLanes["in1"] == lanes);
    checkGpu(c);
  }
}

TEST_CASE("GPU row norms of long rows read 16-byte vectors in every pass", "[gpu-lower][schedule]") {
  AssemblyBatch assembly; // every GPU kernel below through both backends and ptxas
  LoweringCase c(53);
  ir::Value *x = c.input("x", DType::F16, {4, 2048}, -4, 4);
  ir::Value *mask = c.input("mask", DType::F16, {2048}, -1, 0);
  c.output(c.node(OpKind::Softmax, {c.node(OpKind::Add, {x, mask})}, {{"axis", -1}}));
  OneGroup one = lowerOnly(c);
  auto *s = std::get_if<lower::GpuRowNormSchedule>(&one.schedule);
  REQUIRE(s != nullptr);
  CHECK(s->vectorWidth == 8);
  CHECK(one.census.vectorLoadLanes["in0"] == 8);
  CHECK(one.census.vectorLoadLanes["in1"] == 8);
  checkGpu(c);

  LoweringCase l(54);
  ir::Value *y = l.input("y", DType::F32, {3, 8, 512});
  ir::Value *scale = l.input("scale", DType::F32, {8, 512});
  l.output(l.node(OpKind::LayerNorm, {y, scale, scale}, {{"axis", 1}, {"epsilon", 1e-5}}));
  OneGroup norm = lowerOnly(l);
  auto *t = std::get_if<lower::GpuRowNormSchedule>(&norm.schedule);
  REQUIRE(t != nullptr);
  CHECK(t->vectorWidth == 4);
  CHECK(norm.census.vectorLoadLanes["in0"] == 4);
  checkGpu(l);
  lower::GpuRowNormSchedule scalar = *t;
  scalar.vectorWidth = 1;
  CHECK(lowerOnly(l, scalar).census.vectorLoadLanes["in0"] == 1);
}

TEST_CASE("GPU kernels: broadcast groups vectorize only on whole-vector rows", "[gpu-lower][schedule]") {
  AssemblyBatch assembly; // every GPU kernel below through both backends and ptxas
  for (int64_t width : {32, 33}) {
    LoweringCase c(13);
    ir::Value *x = c.input("x", DType::F32, {5, width});
    ir::Value *b = c.input("b", DType::F32, {width});
    c.output(c.node(OpKind::Add, {x, b}));
    OneGroup one = lowerOnly(c);
    CHECK(one.census.vectorStoreLanes["out"] == (width % 4 == 0 ? 4 : 1));
    // x and the row-broadcast b both arrive by vector loads on whole-vector rows.
    int vectorInputs = 0;
    for (const auto &[name, lanes] : one.census.vectorLoadLanes)
      vectorInputs += lanes == 4 ? 1 : 0;
    CHECK(vectorInputs == (width % 4 == 0 ? 2 : 0));
    CHECK(one.census.vectorLoadLanes.size() == 2);
    checkGpu(c);
  }
}

TEST_CASE("GPU transpose kernels stage a padded shared tile behind a barrier", "[gpu-lower][schedule]") {
  AssemblyBatch assembly; // every GPU kernel below through both backends and ptxas
  for (auto [tile, rows] : {std::pair{32, 8}, std::pair{16, 4}, std::pair{64, 16}}) {
    INFO("tile " << tile << " rows " << rows);
    LoweringCase c(14);
    ir::Value *x = c.input("x", DType::F32, {70, 45});
    c.output(c.node(OpKind::Neg, {c.node(OpKind::Transpose, {x}, {{"perm", Ints{1, 0}}})}));
    OneGroup one = lowerOnly(c, lower::GpuTransposeSchedule{.tile = tile, .rowsPerPass = rows});
    REQUIRE(one.census.shared.size() == 1);
    CHECK(one.census.shared[0]->size == int64_t{tile} * (tile + 1));
    CHECK(one.census.barriers == 1);
    CHECK(one.launch.block[0] == tile);
    CHECK(one.launch.block[1] == rows);
    CHECK(one.launch.numBlocks() == lower::ceilDiv(70, tile) * lower::ceilDiv(45, tile));
  }
}

TEST_CASE("GPU-lowered pointwise kernels cover the grid-stride loop and the scalar tail", "[gpu-lower][schedule]") {
  AssemblyBatch assembly; // every GPU kernel below through both backends and ptxas
  // 132 SMs x 1 block x 32 threads x 1 vector of 4: 16896 elements per step, so
  // 40003 elements take three steps and a tail of three.
  LoweringCase c(15);
  ir::Value *x = c.input("x", DType::F32, {40003});
  ir::Value *y = c.input("y", DType::F32, {40003});
  c.output(c.node(OpKind::Sub, {x, c.node(OpKind::Exp, {y})}));
  NamedTensors want = c.reference();
  GpuScheduleChooser strided = [](const ir::Graph &, const passes::FusionGroup &, const codegen::GpuTarget &) {
    return lower::Schedule(lower::GpuPointwiseSchedule{.threadsPerBlock = 32, .vectorWidth = 4,
                                                       .elementsPerThread = 1, .maxBlocksPerSm = 1});
  };
  compareOnGpu(c, want, strided);
  OneGroup one = lowerOnly(c, lower::GpuPointwiseSchedule{.threadsPerBlock = 32, .vectorWidth = 4,
                                                          .elementsPerThread = 1, .maxBlocksPerSm = 1});
  CHECK(one.launch.numBlocks() == testGpuTarget().numSms);
}

TEST_CASE("illegal GPU schedules are errors naming the field", "[gpu-lower][schedule]") {
  AssemblyBatch assembly; // every GPU kernel below through both backends and ptxas
  codegen::GpuTarget target = testGpuTarget();
  auto errorOf = [&](LoweringCase &c, lower::Schedule schedule) {
    auto plan = passes::planFusion(c.graph());
    REQUIRE(plan);
    auto lowered = lower::lowerGroup(c.graph(), plan->groups.back(), schedule, target);
    REQUIRE(!lowered);
    CHECK(lowered.error().code() == ErrorCode::InvalidArgument);
    return lowered.error().message();
  };
  LoweringCase p(16);
  ir::Value *x = p.input("x", DType::F32, {8, 8});
  p.output(p.node(OpKind::Neg, {x}));
  CHECK_THAT(errorOf(p, lower::GpuPointwiseSchedule{.vectorWidth = 3}), Catch::Contains("vectorWidth 3"));
  CHECK_THAT(errorOf(p, lower::GpuPointwiseSchedule{.vectorWidth = 8}), Catch::Contains("vectorWidth 8"));
  CHECK_THAT(errorOf(p, lower::GpuPointwiseSchedule{.threadsPerBlock = 2048}), Catch::Contains("threadsPerBlock"));
  CHECK_THAT(errorOf(p, lower::GpuTransposeSchedule{.tile = 32, .rowsPerPass = 3}), Catch::Contains("rowsPerPass 3"));
  CHECK_THAT(errorOf(p, lower::PointwiseSchedule{}), Catch::Contains("does not apply"));
  LoweringCase r(17);
  ir::Value *y = r.input("y", DType::F32, {8, 8});
  r.output(r.node(OpKind::ReduceSum, {y}, {{"axes", Ints{1}}, {"keepdims", false}}));
  CHECK_THAT(errorOf(r, lower::GpuReductionSchedule{.threadsPerBlock = 96, .rowsPerBlock = 1}),
             Catch::Contains("not a power of two"));
  CHECK_THAT(errorOf(r, lower::GpuReductionSchedule{.threadsPerBlock = 64, .rowsPerBlock = 3}),
             Catch::Contains("rowsPerBlock 3"));
  CHECK_THAT(errorOf(r, lower::GpuReductionSchedule{.threadsPerBlock = 16, .rowsPerBlock = 1}),
             Catch::Contains("whole number of warps"));
  CHECK_THAT(errorOf(r, lower::GpuRowNormSchedule{}), Catch::Contains("does not apply"));
  CHECK(lower::scheduleStr(lower::GpuReductionSchedule{.threadsPerBlock = 128, .rowsPerBlock = 4}) ==
        "gpu.reduction threads=128 rows=4 vw=1");
  CHECK_THAT(errorOf(r, lower::GpuReductionSchedule{.threadsPerBlock = 64, .rowsPerBlock = 1, .vectorWidth = 8}),
             Catch::Contains("vectorWidth 8"));
}

TEST_CASE("GPU-lowered sizes around every block and tile", "[gpu-lower][schedule]") {
  AssemblyBatch assembly; // every GPU kernel below through both backends and ptxas
  for (int64_t n : {1, 3, 31, 33, 100, 257, 1000}) {
    INFO("n = " << n);
    LoweringCase c(static_cast<uint64_t>(n) + 200);
    ir::Value *x = c.input("x", DType::F32, {n});
    ir::Value *y = c.input("y", DType::F32, {n});
    c.output(c.node(OpKind::Div, {x, c.node(OpKind::Add, {y, c.node(OpKind::Exp, {x})})}));
    ir::Value *m = c.input("m", DType::F16, {3, n});
    c.output(c.node(OpKind::ReduceSum, {m}, {{"axes", Ints{1}}, {"keepdims", false}}));
    c.output(c.node(OpKind::ArgMin, {m}, {{"axis", 1}, {"keepdims", false}}));
    c.output(c.node(OpKind::ReduceMax, {m}, {{"axes", Ints{0}}, {"keepdims", false}}));
    c.output(c.node(OpKind::Softmax, {m}, {{"axis", -1}}));
    c.output(c.node(OpKind::Transpose, {c.node(OpKind::Neg, {m})}, {{"perm", Ints{1, 0}}}));
    checkGpu(c);
  }
}

} // namespace
} // namespace kiln::test
