// Schedules, dispatch and printing: scheduleStr of every variant, the default
// and the space of each kind, kernel names and parameters, schedule
// mismatches, every schedule of the space computing the same result, and
// printLoweredGraph's listing.
#include "LoweringTestUtil.h"

#include "ir/graph/Parser.h"

#include <set>

namespace kiln::test {
namespace {

using ir::OpKind;
using Ints = std::vector<int64_t>;

TEST_CASE("scheduleStr prints every schedule variant on one line", "[lower][schedule]") {
  CHECK(lower::scheduleStr(lower::NoSchedule{}) == "none");
  CHECK(lower::scheduleStr(lower::PointwiseSchedule{.vectorWidth = 8, .minParallelWork = 100}) ==
        "pointwise vw=8 par=100");
  CHECK(lower::scheduleStr(lower::TransposeSchedule{.tile = 16, .minParallelWork = 7}) ==
        "transpose tile=16 par=7");
  CHECK(lower::scheduleStr(lower::ReductionSchedule{.vectorWidth = 4, .minParallelWork = 1}) ==
        "reduction vw=4 par=1");
  CHECK(lower::scheduleStr(lower::RowNormSchedule{}) == "rownorm vw=8 par=32768");
  CHECK(lower::scheduleStr(lower::PoolingSchedule{}) == "pooling vw=8 par=32768");
  CHECK(lower::scheduleStr(lower::MatMulSchedule{}) ==
        "matmul mc=96 nc=512 kc=256 mr=6 nr=16 vw=8 pack=ab par=inner");
  lower::MatMulSchedule unpacked;
  unpacked.packA = false;
  CHECK(lower::scheduleStr(unpacked) ==
        "matmul mc=96 nc=512 kc=256 mr=6 nr=16 vw=8 pack=b par=inner");
  lower::Conv2DSchedule conv;
  CHECK(lower::scheduleStr(conv) ==
        "conv2d im2col mc=96 nc=512 kc=256 mr=6 nr=16 vw=8 pack=ab par=inner");
  conv.algorithm = lower::Conv2DSchedule::Algorithm::Direct;
  CHECK(lower::scheduleStr(conv) ==
        "conv2d direct ocb=16 mc=96 nc=512 kc=256 mr=6 nr=16 vw=8 pack=ab par=inner");
}

/// A graph with one group of each non-contraction kind, in this order:
/// pointwise, transpose-like pointwise, reduction, row norm, pooling.
std::unique_ptr<ir::Graph> graphOfEveryKind() {
  auto graph = ir::parseGraph(R"(graph @kinds {
  input %x: f64[2,3,20,20]
  input %y: f32[40,70]
  %0: f64[2,3,20,20] = exp(%x)
  %1: f32[70,40] = transpose(%y) {perm = [1, 0]}
  %2: f32[70,40] = neg(%1)
  %3: f64[2,3] = reduce_sum(%0) {axes = [2, 3]}
  %4: f32[40,70] = softmax(%y) {axis = -1}
  %5: f64[2,3,10,10] = max_pool2d(%0) {kernel = [2, 2], stride = [2, 2]}
  output "a" = %2
  output "b" = %3
  output "c" = %4
  output "d" = %5
  output "e" = %0
})");
  REQUIRE(graph);
  return std::move(*graph);
}

TEST_CASE("default schedules follow the target's vector width and the group kind", "[lower][schedule]") {
  auto graph = graphOfEveryKind();
  auto plan = passes::planFusion(*graph);
  REQUIRE(plan);
  REQUIRE(plan->groups.size() == 5);
  codegen::CpuTarget avx2 = codegen::referenceCpuTarget(); // 256-bit vectors
  std::vector<std::string> got;
  for (const passes::FusionGroup &group : plan->groups)
    got.push_back(lower::scheduleStr(lower::defaultSchedule(*graph, group, avx2)));
  // f64: 4 lanes per register, sums and reductions two registers of partials.
  CHECK(got == std::vector<std::string>{"pointwise vw=4 par=32768", "transpose tile=64 par=32768",
                                        "reduction vw=8 par=32768", "rownorm vw=16 par=16384",
                                        "pooling vw=8 par=16384"});
  codegen::CpuTarget sse = avx2;
  sse.vectorBits = 128;
  CHECK(lower::scheduleStr(lower::defaultSchedule(*graph, plan->groups[3], sse)) ==
        "rownorm vw=8 par=16384");
}

TEST_CASE("the schedule space starts with the default, has no duplicates and every member "
          "lowers to the same result", "[lower][schedule]") {
  auto graph = graphOfEveryKind();
  auto plan = passes::planFusion(*graph);
  REQUIRE(plan);
  const codegen::CpuTarget &target = testHostTarget();
  Rng rng(3);
  NamedTensors inputs;
  inputs.emplace("x", HostTensor::randomUniform(DType::F64, {2, 3, 20, 20}, rng));
  inputs.emplace("y", HostTensor::randomUniform(DType::F32, {40, 70}, rng));
  auto want = ir::interpret(*graph, inputs);
  REQUIRE(want);
  for (const passes::FusionGroup &group : plan->groups) {
    std::vector<lower::Schedule> space = lower::scheduleSpace(*graph, group, target);
    REQUIRE(space.size() >= 3);
    CHECK(lower::scheduleStr(space[0]) ==
          lower::scheduleStr(lower::defaultSchedule(*graph, group, target)));
    std::set<std::string> seen;
    for (const lower::Schedule &s : space)
      CHECK(seen.insert(lower::scheduleStr(s)).second);
    for (const lower::Schedule &s : space) {
      INFO("group " << group.id << " schedule " << lower::scheduleStr(s));
      // This group gets `s`; the others their defaults.
      ScheduleChooser chooser = [&](const ir::Graph &g, const passes::FusionGroup &other,
                                    const codegen::CpuTarget &t) {
        return other.id == group.id ? s : lower::defaultSchedule(g, other, t);
      };
      GroupRunOptions options;
      options.executor = Executor::Jit;
      options.chooseSchedule = chooser;
      auto got = runLoweredGraph(*graph, inputs, options);
      REQUIRE(got);
      for (const auto &[name, tensor] : *want)
        CHECK(compareTensors(got->at(name), tensor) == "");
    }
  }
}

TEST_CASE("kernels are named after their group and take inputs, then the output", "[lower][schedule]") {
  auto graph = graphOfEveryKind();
  auto plan = passes::planFusion(*graph);
  REQUIRE(plan);
  const codegen::CpuTarget target = codegen::referenceCpuTarget();
  std::vector<std::string> names;
  for (const passes::FusionGroup &group : plan->groups) {
    auto lowered = lower::lowerGroup(*graph, group, lower::defaultSchedule(*graph, group, target), target);
    REQUIRE(lowered);
    names.push_back(lowered->kernel.name);
    REQUIRE(lowered->numInputs == static_cast<int>(group.inputs.size()));
    CHECK(lowered->numWorkspaces == 0);
    const auto &params = lowered->kernel.params;
    REQUIRE(params.size() == group.inputs.size() + 1);
    for (size_t i = 0; i < group.inputs.size(); ++i) {
      CHECK(params[i]->name == fmt::format("in{}", i));
      CHECK(params[i]->dtype == group.inputs[i]->type().dtype);
      CHECK(params[i]->size == group.inputs[i]->type().numElements());
    }
    CHECK(params.back()->name == "out");
    CHECK(params.back()->size == group.root->type().numElements());
  }
  CHECK(names == std::vector<std::string>{"k0_pointwise_exp", "k1_pointwise_neg",
                                          "k2_reduction_reduce_sum", "k3_row_norm_softmax",
                                          "k4_pooling_max_pool2d"});
}

TEST_CASE("a schedule of another kind is an error naming the group", "[lower][schedule]") {
  auto graph = graphOfEveryKind();
  auto plan = passes::planFusion(*graph);
  REQUIRE(plan);
  const codegen::CpuTarget target = codegen::referenceCpuTarget();
  auto lowered = lower::lowerGroup(*graph, plan->groups[2], lower::PoolingSchedule{}, target);
  REQUIRE(!lowered);
  CHECK(lowered.error().code() == ErrorCode::InvalidArgument);
  CHECK(lowered.error().message() ==
        "lowering: schedule 'pooling vw=8 par=32768' does not apply to group 2 (reduction reduce_sum)");
}

TEST_CASE("one entry point per step serves both targets through their tables",
          "[lower][schedule]") {
  auto graph = graphOfEveryKind();
  auto plan = passes::planFusion(*graph);
  REQUIRE(plan);
  const lower::LoweringTarget cpu = codegen::referenceCpuTarget();
  auto gpuTarget = codegen::gpuTargetNamed("sm_80");
  REQUIRE(gpuTarget);
  const lower::LoweringTarget gpu = *gpuTarget;
  for (const passes::FusionGroup &group : plan->groups) {
    INFO("group " << group.id);
    lower::Schedule onCpu = lower::defaultSchedule(*graph, group, cpu);
    lower::Schedule onGpu = lower::defaultSchedule(*graph, group, gpu);
    // Each target's table picks its own kind of schedule, and its space starts with it.
    CHECK(lower::scheduleStr(onCpu).rfind("gpu.", 0) == std::string::npos);
    CHECK(lower::scheduleStr(onGpu).rfind("gpu.", 0) == 0);
    CHECK(lower::scheduleStr(lower::scheduleSpace(*graph, group, gpu).front()) ==
          lower::scheduleStr(onGpu));
    REQUIRE(lower::lowerGroup(*graph, group, onCpu, cpu));
    REQUIRE(lower::lowerGroup(*graph, group, onGpu, gpu));
    // A schedule of the other target is refused by the table, naming the group.
    auto crossed = lower::lowerGroup(*graph, group, onCpu, gpu);
    REQUIRE_FALSE(crossed);
    CHECK(crossed.error().code() == ErrorCode::InvalidArgument);
    CHECK_THAT(crossed.error().message(),
               Catch::Contains(fmt::format("does not apply to group {}", group.id)));
    CHECK_FALSE(lower::lowerGroup(*graph, group, onGpu, cpu));
  }
}

TEST_CASE("a transpose schedule on a group that is not transpose-like lowers as pointwise",
          "[lower][schedule]") {
  LoweringCase c(5);
  ir::Value *x = c.input("x", DType::F32, {9, 13});
  c.output(c.node(OpKind::Exp, {x}));
  NamedTensors want = c.reference();
  ScheduleChooser tiles = [](const ir::Graph &, const passes::FusionGroup &, const codegen::CpuTarget &) {
    return lower::Schedule(lower::TransposeSchedule{.tile = 4, .minParallelWork = 1});
  };
  NamedTensors got = c.lowered(Executor::Evaluator, tiles);
  CHECK(compareTensors(got.at("out0"), want.at("out0")) == "");
}

TEST_CASE("printLoweredGraph lists every group with its schedule and kernel", "[lower][schedule]") {
  auto graph = ir::parseGraph(R"(graph @small {
  input %x: f32[4,6]
  %0: f32[2,12] = reshape(%x) {shape = [2, 12]}
  %1: f32[2] = reduce_max(%0) {axes = [1]}
  %2: f32[3] = constant() {dtype = f32, shape = [3], value = [1, 2, 3]}
  %3: f32[3] = exp(%2)
  output "a" = %0
  output "m" = %1
  output "e" = %3
})");
  REQUIRE(graph);
  std::string text = lower::printLoweredGraph(**graph, codegen::referenceCpuTarget());
  CHECK_THAT(text, Catch::StartsWith("// group 0 alias schedule: none\n"
                                     "// group 1 reduction schedule: reduction vw=16 par=32768\n"
                                     "kernel k1_reduction_reduce_max(in0: f32[24], out: f32[2]) {\n"));
  CHECK_THAT(text, Catch::Contains("// group 2 constant schedule: none\n"
                                   "// group 3 pointwise schedule: pointwise vw=8 par=32768\n"
                                   "kernel k3_pointwise_exp(in0: f32[3], out: f32[3]) {\n"
                                   "  for i0 in [0, 3) vectorized {\n"
                                   "    store f32 out[i0] = exp(load f32 in0[i0])\n"
                                   "  }\n"
                                   "}\n"));
}

} // namespace
} // namespace kiln::test
