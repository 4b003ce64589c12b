// The shape of the kernel IR the GEMM template builds: a register tile touched only at
// constant indices with explicit vectors, one fused multiply-add per accumulator per k,
// parallel loops where the schedule asks, and workspaces of exactly the sizes needed.
#include "lower/contraction/ContractionTestUtil.h"

#include "ir/kernel/Visitor.h"
#include "passes/lower/GemmSchedule.h"

using namespace kiln;
using namespace kiln::test;
using ir::OpKind;
using lower::MatMulSchedule;
using Parallel = MatMulSchedule::Parallel;

namespace {

/// Facts gathered from one kernel.
class KernelFacts : public kir::IRVisitor {
public:
  int registerAccesses = 0, nonConstantRegisterAccesses = 0, scalarRegisterAccesses = 0;
  int vectorFmas = 0, scalarFmas = 0, vectorMulAdds = 0;
  int parallelLoops = 0;
  std::vector<const kir::Buffer *> registerBuffers, localBuffers;

  void visitAllocate(const kir::Allocate &node) override {
    if (node.buffer->scope == kir::MemScope::Register)
      registerBuffers.push_back(node.buffer.get());
    if (node.buffer->scope == kir::MemScope::Local)
      localBuffers.push_back(node.buffer.get());
    StmtVisitor::visitAllocate(node);
  }
  void visitFor(const kir::For &node) override {
    parallelLoops += node.loopKind == kir::ForKind::Parallel;
    StmtVisitor::visitFor(node);
  }
  void visitStore(const kir::Store &node) override {
    noteAccess(*node.buffer, node.index, node.value->type().lanes);
    StmtVisitor::visitStore(node);
  }
  void visitLoad(const kir::Load &node) override {
    noteAccess(*node.buffer, node.index, node.type().lanes);
    ExprVisitor::visitLoad(node);
  }
  void visitCall(const kir::Call &node) override {
    if (node.fn == kir::Intrinsic::Fma)
      (node.type().isVector() ? vectorFmas : scalarFmas) += 1;
    ExprVisitor::visitCall(node);
  }
  void visitBinary(const kir::Binary &node) override {
    if (node.op == kir::BinaryOp::Add && node.type().isVector())
      if (auto product = kir::as<kir::Binary>(*node.rhs);
          product && product->op == kir::BinaryOp::Mul)
        ++vectorMulAdds;
    ExprVisitor::visitBinary(node);
  }

private:
  void noteAccess(const kir::Buffer &buffer, const kir::ExprPtr &index, int lanes) {
    if (buffer.scope != kir::MemScope::Register)
      return;
    ++registerAccesses;
    nonConstantRegisterAccesses += kir::as<kir::IntImm>(*index) == nullptr;
    scalarRegisterAccesses += lanes == 1;
  }
};

struct Lowered {
  lower::LoweredKernel kernel;
  KernelFacts facts;
};

Lowered lowerMatMul(GraphCase &c, const MatMulSchedule &s) {
  PlannedContraction planned = planContraction(c.graph());
  auto lowered = lower::lowerContractionForCpu(c.graph(), *planned.group, s, hostTarget());
  INFO((lowered ? std::string() : lowered.error().str()));
  REQUIRE(lowered);
  Lowered result{*lowered, {}};
  result.facts.visit(lowered->kernel.body);
  return result;
}

MatMulSchedule schedule(int64_t mr, int64_t vectors, int64_t mc, int64_t nc, int64_t kc,
                        Parallel parallel, DType accumulate = DType::F32) {
  MatMulSchedule s;
  s.vectorWidth = lower::accumulateLanes(accumulate, hostTarget());
  s.mr = mr;
  s.nr = vectors * s.vectorWidth;
  s.mc = mc * mr;
  s.nc = nc * s.nr;
  s.kc = kc;
  s.parallel = parallel;
  return s;
}

/// x[m, k] @ w[k, n], with bias + relu when `epilogue`.
GraphCase matmulCase(int64_t m, int64_t n, int64_t k, bool epilogue, DType dtype = DType::F32,
                     DType accumulate = DType::F32) {
  GraphCase c;
  ir::Value *x = c.input("x", dtype, {m, k});
  ir::Value *w = c.input("w", dtype, {k, n});
  ir::Value *mm = c.node(OpKind::MatMul, {x, w}, matmulAttrs(false, false, accumulate));
  if (epilogue) {
    ir::Value *bias = c.input("bias", mm->type().dtype, {n});
    mm = c.node(OpKind::Relu, {c.node(OpKind::Add, {mm, bias})});
  }
  c.output(mm);
  return c;
}

} // namespace

TEST_CASE("gemm template: the register tile is vectors at constant indices",
          "[lower][contraction][gemm]") {
  for (auto [mr, vectors] : {std::pair<int64_t, int64_t>{6, 2}, {4, 3}, {1, 4}, {3, 1}}) {
    GraphCase c = matmulCase(50, 70, 40, true);
    Lowered l = lowerMatMul(c, schedule(mr, vectors, 2, 2, 16, Parallel::Inner));
    INFO("mr " << mr << " vectors " << vectors);
    REQUIRE(l.facts.registerBuffers.size() == 1);
    CHECK(l.facts.registerBuffers[0]->size == mr * vectors * hostTarget().f32Lanes());
    CHECK(l.facts.registerAccesses > 0);
    CHECK(l.facts.nonConstantRegisterAccesses == 0);
    CHECK(l.facts.scalarRegisterAccesses == 0);
    // One fused multiply-add per accumulator vector in the k loop, none scalar.
    CHECK(l.facts.vectorFmas == mr * vectors);
    CHECK(l.facts.scalarFmas == 0);
  }
}

TEST_CASE("gemm template: integers multiply and add without fma", "[lower][contraction][gemm]") {
  GraphCase c = matmulCase(20, 30, 40, false, DType::I8, DType::I32);
  Lowered l = lowerMatMul(c, schedule(4, 2, 2, 2, 16, Parallel::Serial, DType::I32));
  CHECK(l.facts.vectorFmas == 0);
  CHECK(l.facts.vectorMulAdds == 4 * 2);
  CHECK(l.facts.nonConstantRegisterAccesses == 0);
}

TEST_CASE("gemm template: parallel loops follow the schedule", "[lower][contraction][gemm]") {
  GraphCase c = matmulCase(50, 70, 40, true);
  // Inner: the B panel packing and the row-block tasks, once per (jc, pc) step.
  CHECK(lowerMatMul(c, schedule(6, 2, 2, 2, 16, Parallel::Inner)).facts.parallelLoops == 2);
  // Outer: one loop over (batch, column panel) tasks.
  CHECK(lowerMatMul(c, schedule(6, 2, 2, 2, 16, Parallel::Outer)).facts.parallelLoops == 1);
  CHECK(lowerMatMul(c, schedule(6, 2, 2, 2, 16, Parallel::Serial)).facts.parallelLoops == 0);
}

TEST_CASE("gemm template: workspaces are exactly what the schedule needs",
          "[lower][contraction][gemm]") {
  int64_t vw = hostTarget().f32Lanes();
  SECTION("inner mode with one K block: the shared B panel only") {
    GraphCase c = matmulCase(50, 70, 40, true);
    Lowered l = lowerMatMul(c, schedule(6, 2, 2, 2, 64, Parallel::Inner));
    REQUIRE(l.kernel.numWorkspaces == 1);
    const kir::Buffer &panel = *l.kernel.kernel.params.back();
    CHECK(panel.scope == kir::MemScope::Global);
    // kc clamped to K = 40, nc = 2 strips of 2 vectors.
    CHECK(panel.size == 40 * 2 * 2 * vw);
  }
  SECTION("inner mode, K in blocks, with an epilogue: B panel and f32 partial sums") {
    GraphCase c = matmulCase(50, 70, 40, true);
    Lowered l = lowerMatMul(c, schedule(6, 2, 2, 2, 16, Parallel::Inner));
    REQUIRE(l.kernel.numWorkspaces == 2);
    const auto &params = l.kernel.kernel.params;
    CHECK(params[params.size() - 2]->size == 16 * 2 * 2 * vw);
    CHECK(params.back()->size == 50 * 70);
    CHECK(params.back()->dtype == DType::F32);
  }
  SECTION("K in blocks with a plain f32 result: partial sums live in the output") {
    GraphCase c = matmulCase(50, 70, 40, false);
    Lowered l = lowerMatMul(c, schedule(6, 2, 2, 2, 16, Parallel::Inner));
    CHECK(l.kernel.numWorkspaces == 1);
  }
  SECTION("f16 output needs f32 partial sums") {
    GraphCase c = matmulCase(50, 70, 40, false, DType::F16);
    Lowered l = lowerMatMul(c, schedule(6, 2, 2, 2, 16, Parallel::Inner));
    REQUIRE(l.kernel.numWorkspaces == 2);
    CHECK(l.kernel.kernel.params.back()->dtype == DType::F32);
  }
  SECTION("outer mode packs per task: no workspace with one K block") {
    GraphCase c = matmulCase(50, 70, 40, true);
    Lowered l = lowerMatMul(c, schedule(6, 2, 2, 2, 64, Parallel::Outer));
    CHECK(l.kernel.numWorkspaces == 0);
    // Per task: the B panel, the A block and the tile.
    CHECK(l.facts.localBuffers.size() == 3);
  }
  SECTION("inputs, then the output, then the workspaces") {
    GraphCase c = matmulCase(50, 70, 40, true);
    Lowered l = lowerMatMul(c, schedule(6, 2, 2, 2, 16, Parallel::Inner));
    CHECK(l.kernel.numInputs == 3);
    CHECK(l.kernel.kernel.params.size() == 3 + 1 + 2);
    CHECK(l.kernel.kernel.params[3]->name == "out");
  }
}
