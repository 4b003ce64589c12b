// Models on the real GPU against the fp64 reference: every op of the table,
// the fusion patterns at odd sizes, every example model, through both
// backends; and the executor under repeated, graphed, profiled and concurrent runs.
#include "GpuTestDevice.h"

#include "compiler/CompileTestUtil.h"
#include "compiler/Devices.h"
#include "compiler/EveryOpGraph.h"
#include "frontend/TempDir.h"
#include "examples/models/ExampleRegistry.h"
#include "examples/models/TransformerBlock.h"
#include "examples/models/VggTransfer.h"
#include "runtime/DeviceExecutor.h"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

namespace kiln::test {
namespace {

TEST_CASE("every op of the table on the GPU matches the reference", "[gpu][models]") {
  GpuBackend backend = GENERATE(GpuBackend::Llvm, GpuBackend::Nvrtc);
  INFO("backend " << backendName(backend));
  CompileCase c("every_op_gpu");
  buildEveryOpGraph(c);
  CompileReport report;
  c.check(cudaOptions(backend), &report);
  CHECK_THAT(report.target, Catch::StartsWith("cuda sm_"));
}

TEST_CASE("every op with an empty batch on the GPU matches the reference", "[gpu][models]") {
  GpuBackend backend = GENERATE(GpuBackend::Llvm, GpuBackend::Nvrtc);
  INFO("backend " << backendName(backend));
  CompileCase c("every_op_empty_batch_gpu");
  buildEveryOpGraph(c, 0);
  c.check(cudaOptions(backend));
}

TEST_CASE("fusion patterns on the GPU at odd and round sizes", "[gpu][models]") {
  GpuBackend backend = GENERATE(GpuBackend::Llvm, GpuBackend::Nvrtc);
  int64_t size = GENERATE(1, 17, 127, 256, 1000);
  INFO("backend " << backendName(backend) << ", size " << size);
  CompileOptions options = cudaOptions(backend);

  SECTION("a pointwise chain with broadcasts, in every float dtype") {
    for (DType dtype : {DType::F32, DType::F16, DType::BF16}) {
      CompileCase c("pointwise");
      Tensor x = c.input("x", {3, size}, dtype);
      Tensor b = c.input("b", {size}, dtype);
      c.output("y", gelu(x * 0.5 + b) - tanh(x));
      c.check(options);
    }
  }
  SECTION("row reductions, softmax and layer_norm with prologues and epilogues") {
    CompileCase c("rows");
    Tensor x = c.input("x", {7, size});
    Tensor r = c.input("r", {7, size});
    Tensor g = c.param("g", {size}), bias = c.param("bias", {size});
    c.output("sum", reduceSum(exp(x * 0.1), {1}) + 1.0);
    c.output("softmax", softmax(x + r, -1) * 2.0);
    c.output("layer_norm", layerNorm(x + r, g, bias) + r);
    c.output("column_max", reduceMax(x, {0}));
    c.check(options);
  }
  SECTION("matmul + bias + relu and a residual add") {
    CompileCase c("matmul");
    Tensor x = c.input("x", {size, 67});
    Tensor w = c.param("w", {67, size});
    Tensor bias = c.param("bias", {size});
    Tensor residual = c.input("residual", {size, size});
    c.output("y", relu(matmul(x, w) + bias) + residual);
    c.check(options);
  }
  SECTION("conv2d + bias + relu and pooling") {
    int64_t image = std::min<int64_t>(size + 4, 67);
    CompileCase c("conv");
    Tensor x = c.input("x", {2, 3, image, image});
    Tensor w = c.param("w", {5, 3, 3, 3});
    Tensor bias = c.param("bias", {1, 5, 1, 1});
    c.output("y", maxPool2d(relu(conv2d(x, w) + bias)));
    c.check(options);
  }
}

TEST_CASE("every example model on the GPU matches the reference", "[gpu][models]") {
  const auto &models = examples::exampleModels();
  size_t index = GENERATE(range<size_t>(0, 6));
  GpuBackend backend = GENERATE(GpuBackend::Llvm, GpuBackend::Nvrtc);
  const examples::ExampleModel &example = models.at(index);
  INFO("example " << example.name << ", backend " << backendName(backend));
  Graph graph(example.name, freshSeed());
  // The reference interpreter runs VGG at 224x224 for minutes: these two at test sizes.
  if (example.name == "vgg")
    examples::buildVggTransfer(graph, {.batch = 2, .imageSize = 64});
  else if (example.name == "transformer")
    examples::buildTransformerBlock(
        graph, {.batch = 2, .sequenceLength = 33, .modelDim = 96, .numHeads = 3, .mlpDim = 160});
  else
    example.build(graph, 2);
  REQUIRE(graph.finalize());
  uint64_t seed = freshSeed();
  Rng rng(seed);
  NamedTensors tensors = graph.paramValues();
  for (const ir::Value *input : graph.ir().inputs()) {
    Values values = isInteger(input->type().dtype) ? Values::indices(1000) : Values::normal();
    tensors.emplace(input->name(),
                    randomTensor(input->type().dtype, input->type().shape, rng, values));
  }
  NamedTensors outputs = checkCompiledMatchesReference(
      graph.ir(), tensors, fmt::format("example '{}', input seed {:#x}", example.name, seed),
      cudaOptions(backend));
  CHECK(outputs.size() == graph.ir().outputs().size());
}

/// A small model with several kernels for the executor tests.
struct ExecutorModel {
  CompileCase c{"executor_gpu"};
  ExecutorModel() {
    Tensor x = c.input("x", {33, 65});
    Tensor w = c.param("w", {65, 47});
    Tensor b = c.param("b", {47});
    c.output("y", softmax(relu(matmul(x, w) + b), -1));
  }
};

TEST_CASE("repeated GPU runs reuse the pool and give identical results", "[gpu][executor]") {
  ExecutorModel m;
  CompiledModel model = compileOrFail(m.c.graph().ir(), cudaOptions(GpuBackend::Llvm));
  REQUIRE(model.device() == &gpuTestDevice());
  auto gpu = compiler::cudaDevice();
  REQUIRE(gpu);
  NamedTensors expected = m.c.reference();
  std::optional<NamedTensors> first;
  int64_t allocationsAfterFirst = 0;
  for (int run = 0; run < 20; ++run) {
    RunOptions options;
    options.launchGraph = run % 2 == 1;
    options.poisonBuffers = true;
    auto outputs = model.run(m.c.tensors(), options);
    REQUIRE(outputs);
    if (!first) {
      checkOutputsMatch(m.c.graph().ir(), *outputs, expected);
      first = *outputs;
      allocationsAfterFirst = gpu->pool->stats().deviceAllocations;
      continue;
    }
    INFO("run " << run);
    // Same kernels, same inputs: the same bits, graph or not.
    CHECK(std::ranges::equal(outputs->at("y").bytes(), first->at("y").bytes()));
  }
  // After the first graphed run built its graph, no run asked the driver for memory.
  CHECK(gpu->pool->stats().deviceAllocations == allocationsAfterFirst);
}

TEST_CASE("a second compile on the GPU loads its module from the kernel cache",
          "[gpu][executor]") {
  GpuBackend backend = GENERATE(GpuBackend::Llvm, GpuBackend::Nvrtc);
  INFO("backend " << backendName(backend));
  testing::TempDir cacheDir;
  ExecutorModel m;
  CompileOptions options = cudaOptions(backend);
  options.kernelCacheDir = cacheDir.path().string();
  CompileReport warm;
  CompiledModel first = compileOrFail(m.c.graph().ir(), options);
  auto second = compile(m.c.graph().ir(), options, &warm);
  REQUIRE(second);
  CHECK_THAT(warm.kernelCache, Catch::StartsWith("hit"));
  auto a = first.run(m.c.tensors());
  auto b = second->run(m.c.tensors());
  REQUIRE(a);
  REQUIRE(b);
  checkOutputsMatch(m.c.graph().ir(), *b, m.c.reference());
  CHECK(std::ranges::equal(a->at("y").bytes(), b->at("y").bytes()));
}

TEST_CASE("a profiled GPU run times each kernel with device events", "[gpu][executor]") {
  ExecutorModel m;
  CompiledModel model = compileOrFail(m.c.graph().ir(), cudaOptions(GpuBackend::Nvrtc));
  runtime::RunProfile profile;
  RunOptions options;
  options.profile = &profile;
  REQUIRE(model.run(m.c.tensors(), options));
  REQUIRE(profile.events.size() == model.numKernels() + 2);
  CHECK(profile.device == gpuTestDevice().describe());
  for (const runtime::ProfileEvent &event : profile.events)
    if (event.category == runtime::ProfileCategory::Kernel)
      CHECK(event.durationMs > 0);
  CHECK(model.devicePeak()->memoryBytesPerSecond > 1e11);
}

TEST_CASE("GPU models run from several threads at once", "[gpu][executor]") {
  ExecutorModel m;
  CompiledModel model = compileOrFail(m.c.graph().ir(), cudaOptions(GpuBackend::Llvm));
  constexpr int kThreads = 4;
  std::vector<NamedTensors> tensors(kThreads), expected(kThreads), actual(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    tensors[t] = m.c.tensors();
    tensors[t].insert_or_assign("x", randomTensor(DType::F32, {33, 65}, m.c.rng()));
    auto reference = ir::interpret(m.c.graph().ir(), tensors[t]);
    REQUIRE(reference);
    expected[t] = *reference;
  }
  std::vector<std::string> errors(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int run = 0; run < 10; ++run) {
        RunOptions options;
        options.launchGraph = run % 2 == 0;
        auto outputs = model.run(tensors[t], options);
        if (!outputs) {
          errors[t] = outputs.error().str();
          return;
        }
        actual[t] = std::move(*outputs);
      }
    });
  for (auto &thread : threads)
    thread.join();
  for (int t = 0; t < kThreads; ++t) {
    INFO("thread " << t);
    CHECK(errors[t].empty());
    checkOutputsMatch(m.c.graph().ir(), actual[t], expected[t]);
  }
}

TEST_CASE("a model too large for the GPU fails with the planned arena named", "[gpu][executor]") {
  // A 2^18 x 2^18 f32 intermediate (256 GiB) read by two groups, so it is
  // materialized in the arena: beyond any GPU's memory.
  constexpr int64_t kSide = int64_t{1} << 18;
  CompileCase c("too_large");
  Tensor a = c.input("a", {kSide, 1});
  Tensor b = c.input("b", {1, kSide});
  Tensor big = matmul(a, b);
  c.output("sum", reduceSum(big, {0, 1}));
  c.output("max", reduceMax(big, {0, 1}));
  REQUIRE(c.graph().finalize());
  auto model = compile(c.graph().ir(), cudaOptions(GpuBackend::Llvm));
  REQUIRE(model);
  REQUIRE(model->plan().arenaBytes >= kSide * kSide * 4);
  auto outputs = model->run(c.tensors());
  REQUIRE_FALSE(outputs);
  CHECK(outputs.error().code() == ErrorCode::OutOfMemory);
  CHECK_THAT(outputs.error().str(), Catch::Contains("arena") && Catch::Contains("pool:"));
  // The failure leaves the device usable.
  ExecutorModel m;
  CompiledModel small = compileOrFail(m.c.graph().ir(), cudaOptions(GpuBackend::Llvm));
  auto fine = small.run(m.c.tensors());
  REQUIRE(fine);
  checkOutputsMatch(m.c.graph().ir(), *fine, m.c.reference());
}

} // namespace
} // namespace kiln::test
