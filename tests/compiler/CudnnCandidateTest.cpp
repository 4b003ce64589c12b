// Which conv2d fusion groups get a cuDNN candidate: specs read from real fused
// graphs (plain, + bias, + bias + relu, nhwc, groups and dilation, depthwise, low
// precision), and the groups refused, each with its reason.
#include "compiler/tuning/CudnnCandidate.h"
#include "examples/models/FashionMnistCnn.h"
#include "examples/models/ResNetStyle.h"
#include "passes/fusion/FusionTestUtil.h"

#include <catch2/catch.hpp>

using namespace kiln;
using kiln::runtime::cudnn::ConvLayout;
using kiln::testing::parseOrFail;
using kiln::testing::planOrFail;

namespace {

/// The spec or refusal for the graph's one contraction group (or, without
/// one, its last group).
std::variant<tuning::CudnnConvSpec, std::string> specFor(std::string_view text) {
  auto graph = parseOrFail(text);
  passes::FusionPlan plan = planOrFail(*graph);
  REQUIRE_FALSE(plan.groups.empty());
  const passes::FusionGroup *chosen = &plan.groups.back();
  for (const passes::FusionGroup &group : plan.groups)
    if (group.kind == passes::GroupKind::Contraction)
      chosen = &group;
  return tuning::cudnnConvSpecFor(*graph, *chosen);
}

runtime::cudnn::Conv2DProblem acceptedProblem(std::string_view text) {
  auto spec = specFor(text);
  if (auto *why = std::get_if<std::string>(&spec))
    FAIL("refused: " << *why);
  return std::get<tuning::CudnnConvSpec>(spec).problem;
}

std::string refusal(std::string_view text) {
  auto spec = specFor(text);
  if (std::holds_alternative<tuning::CudnnConvSpec>(spec))
    FAIL("accepted: " << std::get<tuning::CudnnConvSpec>(spec).problem.str());
  return std::get<std::string>(spec);
}

} // namespace

TEST_CASE("cuDNN spec: a plain nchw conv2d", "[cudnn]") {
  auto p = acceptedProblem(R"(graph @g {
  input %x: f32[2,3,9,7]
  param %w: f32[4,3,3,2]
  %0: f32[2,4,4,6] = conv2d(%x, %w) {stride = [2, 1], padding = [0, 0, 0, 0]}
  output "y" = %0
})");
  CHECK(p.dtype == DType::F32);
  CHECK_FALSE(p.allowTf32);
  CHECK(p.layout == ConvLayout::Nchw);
  CHECK(p.batch == 2);
  CHECK(p.inChannels == 3);
  CHECK(p.height == 9);
  CHECK(p.width == 7);
  CHECK(p.outChannels == 4);
  CHECK(p.kernelH == 3);
  CHECK(p.kernelW == 2);
  CHECK(p.outHeight == 4);
  CHECK(p.outWidth == 6);
  CHECK(p.stride == std::array<int64_t, 2>{2, 1});
  CHECK_FALSE(p.bias);
  CHECK_FALSE(p.relu);
  CHECK(p.args.x == 0);
  CHECK(p.args.w == 1);
  CHECK(p.args.bias == -1);
  CHECK(p.args.output == 2);
  CHECK(p.args.count == 3);
}

TEST_CASE("cuDNN spec: conv2d + reshaped bias + relu, as nn::Conv2D builds it", "[cudnn]") {
  auto p = acceptedProblem(R"(graph @g {
  input %x: f32[1,2,6,6]
  param %w: f32[3,2,3,3]
  param %b: f32[3]
  %0: f32[1,3,6,6] = conv2d(%x, %w) {padding = [1, 1, 1, 1], allow_tf32 = true}
  %1: f32[3,1,1] = reshape(%b) {shape = [3, 1, 1]}
  %2: f32[1,3,6,6] = add(%0, %1)
  %3: f32[1,3,6,6] = relu(%2)
  output "y" = %3
})");
  CHECK(p.bias);
  CHECK(p.relu);
  CHECK(p.allowTf32);
  CHECK(p.padding == std::array<int64_t, 2>{1, 1});
  CHECK(p.args.x == 0);
  CHECK(p.args.w == 1);
  CHECK(p.args.bias == 2);
  CHECK(p.args.output == 3);
  CHECK(p.args.count == 4);
}

TEST_CASE("cuDNN spec: bias without relu, the conv as the add's second operand", "[cudnn]") {
  auto p = acceptedProblem(R"(graph @g {
  input %x: f16[2,4,5,5]
  param %w: f16[6,4,1,1]
  param %b: f16[1,6,1,1]
  %0: f16[2,6,5,5] = conv2d(%x, %w)
  %1: f16[2,6,5,5] = add(%b, %0)
  output "y" = %1
})");
  CHECK(p.dtype == DType::F16);
  CHECK(p.bias);
  CHECK_FALSE(p.relu);
  CHECK(p.args.bias == 2);
}

TEST_CASE("cuDNN spec: an explicit broadcast_to of the bias", "[cudnn]") {
  auto p = acceptedProblem(R"(graph @g {
  input %x: f32[2,3,5,5]
  param %w: f32[4,3,3,3]
  param %b: f32[4]
  %0: f32[2,4,3,3] = conv2d(%x, %w)
  %1: f32[4,1,1] = reshape(%b) {shape = [4, 1, 1]}
  %2: f32[2,4,3,3] = broadcast_to(%1) {shape = [2, 4, 3, 3]}
  %3: f32[2,4,3,3] = add(%0, %2)
  output "y" = %3
})");
  CHECK(p.bias);
  CHECK(p.args.bias == 2);
}

TEST_CASE("cuDNN spec: nhwc with a [C] bias, grouped and dilated, bf16", "[cudnn]") {
  auto p = acceptedProblem(R"(graph @g {
  input %x: bf16[1,11,9,6]
  param %w: bf16[4,3,3,3]
  param %b: bf16[4]
  %0: bf16[1,7,9,4] = conv2d(%x, %w) {layout = "nhwc", groups = 2, dilation = [2, 1], padding = [0, 0, 1, 1]}
  %1: bf16[1,7,9,4] = add(%0, %b)
  %2: bf16[1,7,9,4] = relu(%1)
  output "y" = %2
})");
  CHECK(p.layout == ConvLayout::Nhwc);
  CHECK(p.dtype == DType::BF16);
  CHECK(p.groups == 2);
  CHECK(p.dilation == std::array<int64_t, 2>{2, 1});
  CHECK(p.padding == std::array<int64_t, 2>{0, 1});
  CHECK(p.inChannels == 6);
  CHECK(p.height == 11);
  CHECK(p.width == 9);
  CHECK(p.kernelH == 3);
  CHECK(p.kernelW == 3);
  CHECK(p.outHeight == 7);
  CHECK(p.outWidth == 9);
  CHECK(p.bias);
  CHECK(p.relu);
}

TEST_CASE("cuDNN spec: a depthwise conv2d anchors a pooling group and is still a candidate",
          "[cudnn]") {
  auto graph = parseOrFail(R"(graph @g {
  input %x: f32[1,6,8,8]
  param %w: f32[6,1,3,3]
  %0: f32[1,6,8,8] = conv2d(%x, %w) {groups = 6, padding = [1, 1, 1, 1]}
  %1: f32[1,6,8,8] = relu(%0)
  output "y" = %1
})");
  passes::FusionPlan plan = planOrFail(*graph);
  REQUIRE(plan.groups.size() == 1);
  CHECK(plan.groups[0].kind == passes::GroupKind::Pooling);
  auto spec = tuning::cudnnConvSpecFor(*graph, plan.groups[0]);
  REQUIRE(std::holds_alternative<tuning::CudnnConvSpec>(spec));
  const runtime::cudnn::Conv2DProblem &p = std::get<tuning::CudnnConvSpec>(spec).problem;
  CHECK(p.groups == 6);
  CHECK(p.outChannels == 6);
  CHECK(p.relu);
}

TEST_CASE("cuDNN spec: groups cuDNN would not compute exactly are refused with the reason",
          "[cudnn]") {
  SECTION("a residual add") {
    CHECK_THAT(refusal(R"(graph @g {
  input %x: f32[1,4,6,6]
  param %w: f32[4,4,3,3]
  %0: f32[1,4,6,6] = conv2d(%x, %w) {padding = [1, 1, 1, 1]}
  %1: f32[1,4,6,6] = add(%0, %x)
  output "y" = %1
})"),
               Catch::Contains("not a per-channel bias") && Catch::Contains("residual"));
  }
  SECTION("gelu") {
    CHECK_THAT(refusal(R"(graph @g {
  input %x: f32[1,2,5,5]
  param %w: f32[3,2,3,3]
  %0: f32[1,3,3,3] = conv2d(%x, %w)
  %1: f32[1,3,3,3] = gelu(%0)
  output "y" = %1
})"),
               Catch::Contains("gelu is not what cuDNN fuses"));
  }
  SECTION("a cast epilogue") {
    CHECK_THAT(refusal(R"(graph @g {
  input %x: f32[1,2,5,5]
  param %w: f32[3,2,3,3]
  %0: f32[1,3,3,3] = conv2d(%x, %w)
  %1: f16[1,3,3,3] = cast(%0) {dtype = f16}
  output "y" = %1
})"),
               Catch::Contains("cast changes the result to f16[1,3,3,3]"));
  }
  SECTION("relu before the bias") {
    CHECK_THAT(refusal(R"(graph @g {
  input %x: f32[1,2,5,5]
  param %w: f32[3,2,3,3]
  param %b: f32[3,1,1]
  %0: f32[1,3,3,3] = conv2d(%x, %w)
  %1: f32[1,3,3,3] = relu(%0)
  %2: f32[1,3,3,3] = add(%1, %b)
  output "y" = %2
})"),
               Catch::Contains("add after the bias/relu"));
  }
  SECTION("a bias over the width, not the channels") {
    CHECK_THAT(refusal(R"(graph @g {
  input %x: f32[1,2,5,5]
  param %w: f32[3,2,3,3]
  param %b: f32[3]
  %0: f32[1,3,3,3] = conv2d(%x, %w)
  %1: f32[1,3,3,3] = add(%0, %b)
  output "y" = %1
})"),
               Catch::Contains("not a per-channel bias"));
  }
  SECTION("asymmetric padding") {
    CHECK_THAT(refusal(R"(graph @g {
  input %x: f32[1,2,5,5]
  param %w: f32[3,2,3,3]
  %0: f32[1,3,4,3] = conv2d(%x, %w) {padding = [0, 1, 0, 0]}
  output "y" = %0
})"),
               Catch::Contains("padding [0, 1, 0, 0]"));
  }
  SECTION("f32 accumulated in f64") {
    CHECK_THAT(refusal(R"(graph @g {
  input %x: f32[1,2,5,5]
  param %w: f32[3,2,3,3]
  %0: f32[1,3,3,3] = conv2d(%x, %w) {accumulate = f64}
  output "y" = %0
})"),
               Catch::Contains("accumulating in f64"));
  }
  SECTION("integer operands") {
    CHECK_THAT(refusal(R"(graph @g {
  input %x: i8[1,2,5,5]
  param %w: i8[3,2,3,3]
  %0: i32[1,3,3,3] = conv2d(%x, %w) {accumulate = i32}
  output "y" = %0
})"),
               Catch::Contains("conv2d of i8 operands"));
  }
  SECTION("a matmul group") {
    CHECK_THAT(refusal(R"(graph @g {
  input %a: f32[4,8]
  param %b: f32[8,6]
  %0: f32[4,6] = matmul(%a, %b)
  output "y" = %0
})"),
               Catch::Contains("matmul contraction") && Catch::Contains("kiln's kernels"));
  }
  SECTION("a pointwise group") {
    CHECK_THAT(refusal(R"(graph @g {
  input %a: f32[4,8]
  %0: f32[4,8] = relu(%a)
  output "y" = %0
})"),
               Catch::Contains("a pointwise group"));
  }
}

TEST_CASE("cuDNN spec: the seed CNN's convolutions are all candidates", "[cudnn]") {
  Graph model("cnn");
  examples::buildFashionMnistCnn(model, {.batch = 3});
  REQUIRE(model.finalize());
  passes::FusionPlan plan = planOrFail(model.ir());
  int convs = 0;
  for (const passes::FusionGroup &group : plan.groups) {
    if (!group.anchor || group.anchor->kind() != ir::OpKind::Conv2D)
      continue;
    ++convs;
    auto spec = tuning::cudnnConvSpecFor(model.ir(), group);
    if (auto *why = std::get_if<std::string>(&spec))
      FAIL("refused: " << *why);
    const runtime::cudnn::Conv2DProblem &p = std::get<tuning::CudnnConvSpec>(spec).problem;
    INFO(p.str());
    CHECK(p.bias);
    CHECK(p.relu);
    CHECK(p.batch == 3);
    // The arguments name the group's own inputs: the image, the filter, the bias.
    CHECK(group.inputs[static_cast<size_t>(p.args.x)] == group.anchor->operand(0));
    CHECK(group.inputs[static_cast<size_t>(p.args.w)] == group.anchor->operand(1));
    CHECK(group.inputs[static_cast<size_t>(p.args.bias)]->type().numElements() == p.outChannels);
    CHECK(p.args.output == static_cast<int>(group.inputs.size()));
  }
  CHECK(convs == 3);
}

TEST_CASE("cuDNN spec: ResNet convolutions (batch norm, asymmetric padding) are refused",
          "[cudnn]") {
  Graph model("resnet");
  examples::buildResNetStyle(
      model, {.batch = 2, .imageSize = 8, .stageWidths = {4, 8}, .blocksPerStage = 2});
  REQUIRE(model.finalize());
  passes::FusionPlan plan = planOrFail(model.ir());
  // Stride-2 "same" convolutions pad one more row and column after than
  // before, which the legacy API cannot express; they are refused for that first.
  int convs = 0, batchNorms = 0, asymmetric = 0;
  for (const passes::FusionGroup &group : plan.groups) {
    if (!group.anchor || group.anchor->kind() != ir::OpKind::Conv2D)
      continue;
    ++convs;
    auto spec = tuning::cudnnConvSpecFor(model.ir(), group);
    REQUIRE(std::holds_alternative<std::string>(spec));
    const std::string &why = std::get<std::string>(spec);
    INFO(why);
    bool known = why.find("batch_norm") != std::string::npos ||
                 why.find("pads both sides of an axis alike") != std::string::npos;
    CHECK(known);
    batchNorms += why.find("batch_norm") != std::string::npos;
    asymmetric += why.find("pads both sides") != std::string::npos;
  }
  CHECK(convs == 10);
  CHECK(batchNorms > 0);
  CHECK(asymmetric > 0);
}
