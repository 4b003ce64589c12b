// Fused epilogues of contractions: bias through a broadcast add, relu, a residual add, casts
// to narrower dtypes; each run exactly once per output element even when K is split into
// several blocks (a second run would add the bias twice) or into GPU split tiles; on every
// lowering target.
#include "lower/contraction/ContractionTargets.h"

#include "passes/lower/GemmSchedule.h"

using namespace kiln;
using namespace kiln::test;
using ir::OpKind;
using Parallel = lower::MatMulSchedule::Parallel;

namespace {

/// Blocks small enough that K = 37 takes several kc blocks and M, N several tiles.
std::vector<lower::Schedule> epilogueSchedules() {
  std::vector<lower::Schedule> schedules;
  for (Parallel parallel : {Parallel::Serial, Parallel::Outer, Parallel::Inner}) {
    lower::MatMulSchedule s;
    s.vectorWidth = hostTarget().f32Lanes();
    s.mr = 4;
    s.nr = s.vectorWidth;
    s.mc = 8;
    s.nc = 2 * s.nr;
    s.kc = 8;
    s.parallel = parallel;
    schedules.push_back(s);
  }
  return schedules;
}

/// The default and `cpuBlocks` on the CPU (JIT and evaluator), the default and small single-
/// and double-buffered tiles on the simulator.
void checkAllSchedules(GraphCase &c, int64_t k, DType accumulate = DType::F32,
                       std::vector<lower::Schedule> cpuBlocks = epilogueSchedules()) {
  PlannedContraction planned = planContraction(c.graph());
  // The epilogue is fused: the group holds more than the anchor, and the root is not it.
  CHECK(planned.group->root != planned.group->anchor);
  bool conv = planned.group->anchor->kind() == OpKind::Conv2D;
  auto tiles = [&](int stages) -> lower::Schedule {
    if (conv)
      return lower::GpuConv2DSchedule{smallTiles(stages)};
    return smallTiles(stages);
  };
  TargetSchedules schedules{.sim = {std::nullopt, tiles(1), tiles(2)},
                            .cpuRunners = {Runner::Jit, Runner::Evaluator}};
  schedules.cpu.insert(schedules.cpu.end(), cpuBlocks.begin(), cpuBlocks.end());
  checkOnTargets(c, k, accumulate, schedules);
}

} // namespace

TEST_CASE("epilogue: bias through a broadcast add, then relu", "[lower][contraction][epilogue]") {
  AssemblyBatch assembly; // on the simulator: its kernels through both GPU backends and ptxas
  GraphCase c;
  ir::Value *x = c.input("x", DType::F32, {29, 37});
  ir::Value *w = c.input("w", DType::F32, {37, 43});
  ir::Value *bias = c.input("bias", DType::F32, {43});
  ir::Value *mm = c.node(OpKind::MatMul, {x, w}, matmulAttrs());
  c.output(c.node(OpKind::Relu, {c.node(OpKind::Add, {mm, bias})}));
  checkAllSchedules(c, 37);
}

TEST_CASE("epilogue: explicit broadcast_to of the bias", "[lower][contraction][epilogue]") {
  AssemblyBatch assembly; // on the simulator: its kernels through both GPU backends and ptxas
  GraphCase c;
  ir::Value *x = c.input("x", DType::F32, {2, 11, 37});
  ir::Value *w = c.input("w", DType::F32, {37, 19});
  ir::Value *bias = c.input("bias", DType::F32, {1, 19});
  ir::Value *mm = c.node(OpKind::MatMul, {x, w}, matmulAttrs());
  ir::Value *wide =
      c.node(OpKind::BroadcastTo, {bias}, {{"shape", std::vector<int64_t>{2, 11, 19}}});
  c.output(c.node(OpKind::Add, {mm, wide}));
  checkAllSchedules(c, 37);
}

TEST_CASE("epilogue: residual add and relu", "[lower][contraction][epilogue]") {
  AssemblyBatch assembly; // on the simulator: its kernels through both GPU backends and ptxas
  GraphCase c;
  ir::Value *x = c.input("x", DType::F32, {31, 37});
  ir::Value *w = c.input("w", DType::F32, {37, 35});
  ir::Value *residual = c.input("residual", DType::F32, {31, 35});
  ir::Value *mm = c.node(OpKind::MatMul, {x, w}, matmulAttrs());
  c.output(c.node(OpKind::Relu, {c.node(OpKind::Add, {residual, mm})}));
  checkAllSchedules(c, 37);
}

TEST_CASE("epilogue: cast of an f32 result to f16 and bf16", "[lower][contraction][epilogue]") {
  AssemblyBatch assembly; // on the simulator: its kernels through both GPU backends and ptxas
  for (DType to : {DType::F16, DType::BF16}) {
    GraphCase c;
    ir::Value *x = c.input("x", DType::F32, {21, 37});
    ir::Value *w = c.input("w", DType::F32, {37, 27});
    ir::Value *mm = c.node(OpKind::MatMul, {x, w}, matmulAttrs());
    c.output(c.node(OpKind::Cast, {mm}, {{"dtype", to}}));
    checkAllSchedules(c, 37);
  }
}

TEST_CASE("epilogue: f16 matmul with f16 bias and relu", "[lower][contraction][epilogue]") {
  AssemblyBatch assembly; // on the simulator: its kernels through both GPU backends and ptxas
  GraphCase c;
  ir::Value *x = c.input("x", DType::F16, {19, 37});
  ir::Value *w = c.input("w", DType::F16, {37, 23});
  ir::Value *bias = c.input("bias", DType::F16, {23});
  ir::Value *mm = c.node(OpKind::MatMul, {x, w}, matmulAttrs());
  c.output(c.node(OpKind::Relu, {c.node(OpKind::Add, {mm, bias})}));
  checkAllSchedules(c, 37);
}

TEST_CASE("epilogue: integer matmul plus bias, cast back to i8", "[lower][contraction][epilogue]") {
  AssemblyBatch assembly; // on the simulator: its kernels through both GPU backends and ptxas
  GraphCase c;
  ir::Value *x = c.input("x", DType::I8, {17, 37});
  ir::Value *w = c.input("w", DType::I8, {37, 21});
  ir::Value *bias = c.input("bias", DType::I32, {21});
  ir::Value *mm = c.node(OpKind::MatMul, {x, w}, matmulAttrs(false, false, DType::I32));
  c.output(c.node(OpKind::Cast, {c.node(OpKind::Add, {mm, bias})}, {{"dtype", DType::I8}}));
  lower::MatMulSchedule s;
  s.vectorWidth = lower::accumulateLanes(DType::I32, hostTarget());
  s.mr = 2;
  s.nr = s.vectorWidth;
  s.mc = 4;
  s.nc = s.nr;
  s.kc = 9;
  checkAllSchedules(c, 37, DType::I32, {s});
}

TEST_CASE("epilogue: conv2d with bias and relu, K split into blocks",
          "[lower][contraction][epilogue]") {
  AssemblyBatch assembly; // on the simulator: its kernels through both GPU backends and ptxas
  for (const char *layout : {"nchw", "nhwc"}) {
    INFO(layout);
    GraphCase c;
    bool nhwc = std::string(layout) == "nhwc";
    ConvParams p;
    p.layout = layout;
    p.padding = {1, 1, 1, 1};
    ir::Value *x =
        c.input("x", DType::F32,
                nhwc ? std::vector<int64_t>{2, 9, 7, 5} : std::vector<int64_t>{2, 5, 9, 7});
    ir::Value *w =
        c.input("w", DType::F32,
                nhwc ? std::vector<int64_t>{11, 3, 3, 5} : std::vector<int64_t>{11, 5, 3, 3});
    std::vector<int64_t> biasShape =
        nhwc ? std::vector<int64_t>{11} : std::vector<int64_t>{11, 1, 1};
    ir::Value *bias = c.input("bias", DType::F32, biasShape);
    ir::Value *conv = c.node(OpKind::Conv2D, {x, w}, p.attrs());
    c.output(c.node(OpKind::Relu, {c.node(OpKind::Add, {conv, bias})}));
    checkAllSchedules(c, 45);
  }
}
