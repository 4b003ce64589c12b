// The GPU kernels of every non-contraction kind compile: CUDA C from the CUDA
// emitter, then NVRTC and ptxas's checks for each checked architecture (sm_80,
// sm_90a), with the default schedule and every schedule of the space.
#include "lower/gpu/GpuLoweringTestUtil.h"
#include "NvrtcOnThread.h"

#include "codegen/cuda/CudaSource.h"
#include "codegen/cuda/Nvrtc.h"

namespace kiln::test {
namespace {

using ir::OpKind;
using Ints = std::vector<int64_t>;

/// One graph with a group of each kind (and the variants that take other code paths).
std::unique_ptr<LoweringCase> everyKind() {
  auto c = std::make_unique<LoweringCase>(1);
  ir::Value *x = c->input("x", DType::F16, {6, 40});
  ir::Value *b = c->input("b", DType::F16, {40});
  ir::Value *y = c->input("y", DType::F32, {3, 70});
  ir::Value *i = c->input("i", DType::I8, {5, 33}, -100, 100);
  c->output(c->node(OpKind::Gelu, {c->node(OpKind::Add, {x, b})}, {{"approximate", std::string("tanh")}}));
  c->output(c->node(OpKind::Neg, {c->node(OpKind::Transpose, {y}, {{"perm", Ints{1, 0}}})}));
  c->output(c->node(OpKind::ReduceSum, {y}, {{"axes", Ints{1}}, {"keepdims", false}}));
  c->output(c->node(OpKind::ArgMax, {i}, {{"axis", 1}, {"keepdims", false}}));
  c->output(c->node(OpKind::ReduceMin, {i}, {{"axes", Ints{0}}, {"keepdims", true}}));
  c->output(c->node(OpKind::Softmax, {x}, {{"axis", -1}}));
  c->output(c->node(OpKind::LogSoftmax, {y}, {{"axis", 0}}));
  ir::Value *scale = c->input("scale", DType::F32, {70});
  c->output(c->node(OpKind::LayerNorm, {y, scale, scale}, {{"axis", -1}, {"epsilon", 1e-5}}));
  ir::Value *img = c->input("img", DType::BF16, {2, 3, 9, 9});
  c->output(c->node(OpKind::AvgPool2D, {img}, {{"kernel", Ints{3, 3}}, {"stride", Ints{2, 2}},
                                               {"padding", Ints{1, 1, 1, 1}}, {"count_include_pad", true}}));
  c->output(c->node(OpKind::GlobalAvgPool, {img}, {{"layout", std::string("nchw")}}));
  return c;
}

TEST_CASE("GPU kernels of every kind compile with NVRTC for every checked architecture", "[gpu-lower][compile]") {
  auto c = everyKind();
  auto plan = passes::planFusion(c->graph());
  REQUIRE(plan);
  for (std::string_view arch : codegen::kCheckedGpuArchs) {
    auto target = codegen::gpuTargetNamed(arch);
    REQUIRE(target);
    std::vector<kir::Kernel> kernels;
    int kinds = 0;
    for (const passes::FusionGroup &group : plan->groups) {
      if (group.kind == passes::GroupKind::Constant || group.kind == passes::GroupKind::Alias)
        continue;
      ++kinds;
      std::vector<lower::Schedule> space = lower::scheduleSpace(c->graph(), group, *target);
      for (size_t s = 0; s < space.size(); ++s) {
        auto lowered = lower::lowerGroup(c->graph(), group, space[s], *target);
        INFO(lower::scheduleStr(space[s]) << (lowered ? std::string() : lowered.error().str()));
        REQUIRE(lowered);
        lowered->kernel.name += fmt::format("_s{}", s);
        kernels.push_back(std::move(lowered->kernel));
      }
    }
    CHECK(kinds == 10);
    auto source = codegen::cuda::emitCudaSource(kernels, *target);
    INFO((source ? std::string() : source.error().str()));
    REQUIRE(source);
    auto compiled = compileWithNvrtcOnThread(*source, "gpu_lower_kinds", *target);
    if (!compiled && compiled.error().code() == ErrorCode::Unavailable) {
      WARN("NVRTC is not available, so only the CUDA C emission was checked: " << compiled.error().str());
      CHECK(source->find("__global__") != std::string::npos);
      continue;
    }
    INFO(arch << ": " << (compiled ? std::string() : compiled.error().str()));
    REQUIRE(compiled);
    CHECK(!compiled->cubin.empty());
    for (const kir::Kernel &kernel : kernels)
      CHECK(compiled->ptx.find(kernel.name) != std::string::npos);
  }
}

} // namespace
} // namespace kiln::test
