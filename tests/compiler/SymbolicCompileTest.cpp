// One compile of a graph with a symbolic batch runs every batch size in its range on the CPU
// (docs/dynamic-shapes.md, "Part 2"): kernels read the size at run time, and each run matches
// the fp64 reference at its own size. What is not built yet is refused, naming the op.
#include "CompileTestUtil.h"

#include "compiler/SizeBucketCompile.h"
#include "compiler/aot/AotBundle.h"
#include "examples/models/FashionMnistCnn.h"
#include "examples/models/TransformerBlock.h"
#include "frontend/nn/Dense.h"
#include "ir/graph/Interpreter.h"
#include "ir/graph/Specialize.h"
#include "runtime/bundle/BundleLoader.h"
#include "support/Tolerance.h"

#include <fmt/format.h>

#include <sstream>
#include <string_view>

namespace kiln::test {
namespace {

/// The CPU with one size bucket: every size runs the kernels that read it at run time.
CompileOptions cpuOptions() {
  CompileOptions options;
  options.target = TargetKind::Cpu;
  options.sizeBuckets = std::vector<int64_t>{};
  return options;
}

/// An MLP over a batch of N in [1, 64]: Dense(37, relu) -> Dense(10) -> softmax, and the
/// hidden layer's output as a second output (an intermediate written to a result tensor).
void buildMlp(Graph &graph) {
  Tensor x = graph.input("x", {kiln::dim("N", 1, 64), 29});
  Tensor hidden = nn::Dense(37, nn::Activation::Relu)(graph, x);
  Tensor logits = nn::Dense(10)(graph, hidden);
  graph.output("probabilities", softmax(logits));
  graph.output("hidden", hidden);
}

/// Fresh random values for every input of `graph` with its leading axis at `batch` (its
/// other axes static).
NamedTensors inputsAt(const Graph &graph, int64_t batch, Rng &rng) {
  NamedTensors inputs;
  for (const ir::Value *input : graph.ir().inputs()) {
    std::vector<int64_t> shape = input->type().shape;
    shape.at(0) = batch;
    inputs.emplace(input->name(), randomTensor(input->type().dtype, shape, rng));
  }
  return inputs;
}

/// Runs `model` (compiled once from `graph`, its batch a size symbol) at each of `batches` on
/// fresh random inputs with poisoned buffers, and checks that every output with a symbolic
/// leading axis has the run's batch and every output matches the fp64 reference at that size.
void checkEveryBatch(const Graph &graph, CompiledModel &model,
                     std::initializer_list<int64_t> batches) {
  NamedTensors params = graph.paramValues();
  REQUIRE(model.bindParams(params).has_value());
  uint64_t seed = freshSeed();
  Rng rng(seed);
  for (int64_t batch : batches) {
    CAPTURE(batch, seed);
    NamedTensors inputs = inputsAt(graph, batch, rng);
    auto outputs = model.run(inputs, RunOptions{.poisonBuffers = true});
    REQUIRE(outputs.has_value());
    for (const ir::GraphOutput &output : graph.ir().outputs())
      if (output.value->type().isSymbolic() && !output.value->type().size(0).isConstant())
        CHECK(outputs->at(output.name).shape().at(0) == batch);
    NamedTensors all = inputs;
    all.insert(params.begin(), params.end());
    auto expected = ir::interpret(graph.ir(), all);
    REQUIRE(expected.has_value());
    checkOutputsMatch(graph.ir(), *outputs, *expected);
  }
}

/// checkEveryBatch on `graph` compiled for the CPU.
void checkEveryBatch(const Graph &graph, std::initializer_list<int64_t> batches) {
  CompiledModel model = compileOrFail(graph.ir(), cpuOptions());
  checkEveryBatch(graph, model, batches);
}

TEST_CASE("one compile with a symbolic batch runs every size in its range", "[compile][symbolic]") {
  Graph graph("mlp");
  buildMlp(graph);
  REQUIRE(graph.finalize().has_value());
  // 1, odd sizes around the GEMM's register tiles and row blocks, and the range's maximum.
  checkEveryBatch(graph, {1, 7, 33, 64, 5});
}

TEST_CASE("the CNN example compiled once with a symbolic batch runs 1, 3 and 8 images",
          "[compile][symbolic]") {
  // Convolutions (NHWC between them, NCHW at the ends: the layout pass's transposes), max
  // pooling, flatten and the dense head, each kernel sized by the run's batch.
  Graph graph("cnn");
  examples::buildFashionMnistCnn(
      graph,
      {.batch = kiln::dim("N", 1, 8), .imageSize = 22, .convFilters = {8, 16, 24}, .hidden = 20});
  auto finalized = graph.finalize();
  INFO((finalized ? std::string() : finalized.error().str()));
  REQUIRE(finalized.has_value());
  checkEveryBatch(graph, {3, 1, 8});
}

TEST_CASE("a transformer block compiled once with a symbolic batch runs 1, 2 and 5 sequences",
          "[compile][symbolic]") {
  // Attention (decomposed: a batch of GEMMs per head, the run's count), the heads split and
  // merged by reshapes and transposes that keep the batch leading, layer norms over the
  // features, and the MLP's GEMMs with the batch folded into M.
  Graph graph("block");
  examples::buildTransformerBlock(graph, {.batch = kiln::dim("N", 1, 5),
                                          .sequenceLength = 7,
                                          .modelDim = 12,
                                          .numHeads = 3,
                                          .mlpDim = 20});
  auto finalized = graph.finalize();
  INFO((finalized ? std::string() : finalized.error().str()));
  REQUIRE(finalized.has_value());
  checkEveryBatch(graph, {2, 1, 5});
}

TEST_CASE("reductions, pooling, row norms and transposes keep a symbolic batch",
          "[compile][symbolic]") {
  Graph graph("kinds");
  Tensor x = graph.input("x", {kiln::dim("N", 1, 9), 6, 11, 13});
  Tensor scale = graph.param(
      "scale", HostTensor::fromDoubles(DType::F32, {13}, std::vector<double>(13, 0.75)));
  Tensor bias =
      graph.param("bias", HostTensor::fromDoubles(DType::F32, {13}, std::vector<double>(13, 0.25)));
  graph.output("channel_sums", reduceSum(x, {1}));   // kept innermost: outer reduction
  graph.output("row_max", reduceMax(x, {3}, true));  // reduced innermost: inner reduction
  graph.output("plane_mean", reduceMean(x, {2, 3})); // reduce_mean's divisor is static
  graph.output("pooled", maxPool2d(x, {.kernel = {3, 3}, .stride = {2, 2}}));
  graph.output("averaged", avgPool2d(x));
  graph.output("global", globalAvgPool(x));
  graph.output("nhwc", exp(transpose(x, {0, 2, 3, 1})));
  graph.output("log_softmax", logSoftmax(x, 2)); // softmax over a middle axis
  graph.output("normed", layerNorm(x, scale, bias));
  graph.output("channel_slice", sliceAxis(x, 1, 2, 5)); // the batch taken whole
  REQUIRE(graph.finalize().has_value());
  checkEveryBatch(graph, {1, 5, 9});
}

TEST_CASE("convolutions and matmuls on their own keep a symbolic batch", "[compile][symbolic]") {
  // Convolutions that feed no other stay NCHW: im2col runs a GEMM per image (a runtime
  // batch: 3 output channels, and 16 over 17x17 outputs), the direct kernel folds the images
  // of 7x7 outputs into M (a runtime M). A batched matmul against a shared weight folds its
  // batch into M.
  Graph graph("contractions");
  Tensor x = graph.input("x", {kiln::dim("N", 1, 6), 3, 9, 9});
  Tensor big = graph.input("big", {kiln::dim("N", 1, 6), 3, 19, 19});
  Tensor seq = graph.input("seq", {kiln::dim("N", 1, 6), 7, 12});
  Rng weights(freshSeed());
  Tensor narrow = graph.param("narrow", randomTensor(DType::F32, {3, 3, 3, 3}, weights));
  Tensor wide = graph.param("wide", randomTensor(DType::F32, {16, 3, 3, 3}, weights));
  Tensor projection = graph.param("projection", randomTensor(DType::F32, {12, 10}, weights));
  graph.output("narrow_conv", conv2d(x, narrow));
  graph.output("wide_conv", relu(conv2d(x, wide)));
  graph.output("big_conv", conv2d(big, wide));
  graph.output("projected", matmul(seq, projection));
  REQUIRE(graph.finalize().has_value());
  CompileOptions options = cpuOptions();
  std::ostringstream fused;
  options.dump = kDumpFused;
  options.dumpStream = &fused;
  CompiledModel model = compileOrFail(graph.ir(), options);
  // Both convolution paths are the ones taken, not a fallback.
  CHECK_THAT(fused.str(), Catch::Contains("conv2d im2col") && Catch::Contains("conv2d direct"));
  checkEveryBatch(graph, model, {2, 1, 6});
}

TEST_CASE("a batch of matrices keeps a symbolic batch", "[compile][symbolic]") {
  // Attention's products: one GEMM per matrix, the run's count of them (a runtime batch),
  // with A or B transposed, a second batch axis, and a B broadcast along the heads.
  Graph graph("pairs");
  Dim n = kiln::dim("N", 1, 6);
  Tensor a = graph.input("a", {n, 3, 7, 5});
  Tensor b = graph.input("b", {n, 3, 5, 9});
  Tensor bt = graph.input("bt", {n, 3, 9, 5});
  Tensor shared = graph.input("shared", {n, 1, 5, 9});
  graph.output("ab", matmul(a, b));
  graph.output("abt", relu(matmul(a, bt, {.transposeB = true})));
  graph.output("atb", matmul(b, bt, {.transposeA = true, .transposeB = true}));
  graph.output("broadcast", matmul(a, shared));
  REQUIRE(graph.finalize().has_value());
  checkEveryBatch(graph, {1, 4, 6});
}

TEST_CASE("a symbolic model checks each run's sizes against the range", "[compile][symbolic]") {
  Graph graph("mlp");
  buildMlp(graph);
  REQUIRE(graph.finalize().has_value());
  CompiledModel model = compileOrFail(graph.ir(), cpuOptions());
  REQUIRE(model.bindParams(graph.paramValues()).has_value());
  Rng rng(freshSeed());

  auto tooLarge = model.run({{"x", randomTensor(DType::F32, {65, 29}, rng)}});
  REQUIRE_FALSE(tooLarge.has_value());
  CHECK(tooLarge.error().message() ==
        "input 'x' dim 0 is the size symbol N in [1, 64], but the actual size 65 is outside its "
        "range");

  auto wrongFeatures = model.run({{"x", randomTensor(DType::F32, {3, 28}, rng)}});
  REQUIRE_FALSE(wrongFeatures.has_value());
  CHECK(wrongFeatures.error().message() == "input 'x' dim 1 is 29, got 28");

  auto wrongRank = model.run({{"x", randomTensor(DType::F32, {3, 29, 1}, rng)}});
  REQUIRE_FALSE(wrongRank.has_value());
  CHECK(wrongRank.error().message() == "input 'x' must be f32[64, 29], got f32[3, 29, 1]");
}

TEST_CASE("sums over a symbolic batch divide and stop at the run's rows", "[compile][symbolic]") {
  // What training needs of a symbolic batch: reductions over the leading axis (a loss's mean,
  // a bias gradient's sum, with the innermost axis reduced or kept), a mean dividing by the
  // run's count, symbol_size, and GEMMs whose K is the batch (weight gradients, transposed A
  // or B, K past one kc block and below one), each reading only the run's rows.
  Graph graph("sums");
  Dim n = kiln::dim("N", 1, 300);
  Tensor x = graph.input("x", {n, 4});
  Tensor y = graph.input("y", {n, 6});
  Tensor z = graph.input("z", {n, 3, 5});
  graph.output("column_sums", reduceSum(x, {0}));           // innermost kept: outer reduction
  graph.output("mean", reduceMean(x, {0, 1}));              // all axes: the run's 4N elements
  graph.output("plane_means", reduceMean(z, {0, 2}, true)); // a kept axis between
  graph.output("column_max", reduceMax(z, {0}));
  graph.output("rows", mul(sizeOf(z, {0, 1}), constant(graph, 0.5)));
  graph.output("gram", matmul(x, y, {.transposeA = true}));
  graph.output("gram_t", relu(matmul(y, x, {.transposeA = true})));
  REQUIRE(graph.finalize().has_value());
  // 300 rows pass the largest kc block (256); 1 is a single row.
  checkEveryBatch(graph, {300, 1, 7, 257});
}

TEST_CASE("what kernels cannot size at run time yet is refused, naming the op",
          "[compile][symbolic]") {
  SECTION("a symbol past the leading axis") {
    Graph graph("rows");
    Tensor x = graph.input("x", {3, kiln::dim("T", 1, 16)});
    graph.output("y", relu(x));
    REQUIRE(graph.finalize().has_value());
    auto refused = compile(graph.ir(), cpuOptions());
    REQUIRE_FALSE(refused.has_value());
    CHECK_THAT(refused.error().message(),
               Catch::Contains("has the symbolic size T in axis 1: kernels take runtime sizes "
                               "in the leading axis only so far"));
  }
  SECTION("a parameter with a symbolic size") {
    ir::Graph graph("scaled");
    REQUIRE(graph.declareSymbol({"N", 1, 8}).has_value());
    auto n = ir::SizeExpr::symbol({"N", 1, 8});
    auto x = graph.addInput("x", ir::makeTensorType(DType::F32, {n, 4}).value());
    auto w = graph.addParam("w", ir::makeTensorType(DType::F32, {n, 4}).value());
    REQUIRE((x.has_value() && w.has_value()));
    auto y = graph.addNode(ir::OpKind::Mul, {*x, *w});
    REQUIRE(y.has_value());
    REQUIRE(graph.addOutput("y", *y).has_value());
    auto refused = compile(graph, cpuOptions());
    REQUIRE_FALSE(refused.has_value());
    CHECK(refused.error().message() ==
          "parameter 'w' is f32[N,4]: parameters take static sizes (a run binds the size "
          "symbols from its inputs)");
  }
  SECTION("a GPU GEMM summing over the run's rows") {
    // dW = x^T dy: K is the batch, which the GPU GEMM does not read at run time yet.
    Graph graph("weight_gradient");
    Tensor x = graph.input("x", {kiln::dim("N", 1, 16), 5});
    Tensor dy = graph.input("dy", {kiln::dim("N", 1, 16), 3});
    graph.output("dw", matmul(x, dy, {.transposeA = true}));
    REQUIRE(graph.finalize().has_value());
    CompileOptions options;
    options.target = TargetKind::Sim;
    auto refused = compile(graph.ir(), options);
    REQUIRE_FALSE(refused.has_value());
    CHECK(refused.error().code() == ErrorCode::Unsupported);
    CHECK_THAT(refused.error().message(),
               Catch::Contains("a GPU GEMM summing over a size known at run time"));
  }
}

TEST_CASE("a specialized symbolic graph compiles as a static one", "[compile][symbolic]") {
  Graph graph("mlp");
  buildMlp(graph);
  REQUIRE(graph.finalize().has_value());
  auto specialized = ir::specialize(graph.ir(), {{"N", 3}});
  REQUIRE(specialized.has_value());
  CompiledModel model = compileOrFail(**specialized, cpuOptions());
  REQUIRE(model.bindParams(graph.paramValues()).has_value());
  Rng rng(freshSeed());
  auto wrong = model.run({{"x", randomTensor(DType::F32, {4, 29}, rng)}});
  REQUIRE_FALSE(wrong.has_value());
  CHECK(wrong.error().message() == "input 'x' must be f32[3, 29], got f32[4, 29]");
}

} // namespace
} // namespace kiln::test

namespace kiln::test {
namespace {

/// The names of the kernels a run of `model` at `inputs` launched.
std::vector<std::string> kernelsRun(const CompiledModel &model, const NamedTensors &inputs) {
  runtime::RunProfile profile;
  auto outputs = model.run(inputs, RunOptions{.profile = &profile});
  REQUIRE(outputs.has_value());
  std::vector<std::string> names;
  for (const runtime::ProfileEvent &event : profile.events)
    if (event.category == runtime::ProfileCategory::Kernel)
      names.push_back(event.name);
  return names;
}

bool allStartWith(const std::vector<std::string> &names, std::string_view prefix) {
  return !names.empty() && std::ranges::all_of(names, [&](const std::string &name) {
    return name.starts_with(prefix);
  });
}

TEST_CASE("size buckets: each size runs the smallest bucket that holds it", "[compile][symbolic]") {
  Graph graph("mlp");
  buildMlp(graph);
  REQUIRE(graph.finalize().has_value());
  CompileOptions options = cpuOptions();
  options.sizeBuckets = std::vector<int64_t>{1, 6, 20};
  CompileReport report;
  auto compiled = compile(graph.ir(), options, &report);
  REQUIRE(compiled.has_value());
  CompiledModel &model = *compiled;
  INFO(report.sizeBuckets);
  // N = 1 is a static graph of its own; the other bounds keep their buckets unless one runs
  // exactly the kernels of the next (then that one runs its sizes).
  std::vector<std::vector<int64_t>> bounds = model.sizeBucketBounds();
  REQUIRE(bounds.size() >= 2);
  CHECK(bounds.front() == std::vector<int64_t>{1});
  CHECK(bounds.back() == std::vector<int64_t>{64});
  CHECK(std::ranges::is_sorted(bounds));
  CHECK_THAT(report.sizeBuckets, Catch::StartsWith("N in [1, 64]: "));

  // Sizes at and around each bound match the reference, on fresh parameters bound once.
  checkEveryBatch(graph, model, {1, 2, 6, 7, 20, 21, 64, 5});

  Rng rng(freshSeed());
  auto at = [&](int64_t batch) {
    return kernelsRun(model, {{"x", randomTensor(DType::F32, {batch, 29}, rng)}});
  };
  // Each size runs its bucket's kernels: the smallest bound at or above it; a bucket's own
  // kernels carry its bound ("b6_"), the whole range's none, and a bucket kept apart from the
  // next larger one has at least one kernel of its own.
  CHECK(allStartWith(at(1), "b1_")); // the static kernels of N = 1
  for (int64_t batch : {2, 6, 7, 20, 21, 64}) {
    CAPTURE(batch);
    int64_t bound = std::ranges::find_if(bounds, [&](const std::vector<int64_t> &b) {
                      return b[0] >= batch;
                    })->front();
    std::vector<std::string> names = at(batch);
    REQUIRE_FALSE(names.empty());
    if (bound == 64) {
      for (const std::string &name : names)
        CHECK(name.starts_with("k"));
    } else {
      std::string own = fmt::format("b{}_", bound);
      CHECK(std::ranges::any_of(names, [&](const std::string &n) { return n.starts_with(own); }));
      CHECK(std::ranges::none_of(names, [](const std::string &n) { return n.starts_with("b1_"); }));
    }
  }
}

TEST_CASE("size buckets share the bound parameters and see them change", "[compile][symbolic]") {
  Graph graph("mlp");
  buildMlp(graph);
  REQUIRE(graph.finalize().has_value());
  CompileOptions options = cpuOptions();
  options.sizeBuckets = std::vector<int64_t>{1, 8};
  CompiledModel model = compileOrFail(graph.ir(), options);
  REQUIRE(model.sizeBucketBounds().size() == 3);
  checkEveryBatch(graph, model, {1, 8, 40});
  // New values for every parameter (the dense layers' weights are packed once per value:
  // each bucket must pack them again).
  Graph other("mlp", /*seed=*/freshSeed());
  buildMlp(other);
  REQUIRE(other.finalize().has_value());
  checkEveryBatch(other, model, {40, 8, 1, 3});
  // The range check is the whole model's, whichever bucket would have run the size.
  Rng rng(freshSeed());
  auto tooLarge = model.run({{"x", randomTensor(DType::F32, {65, 29}, rng)}});
  REQUIRE_FALSE(tooLarge.has_value());
  CHECK_THAT(tooLarge.error().message(), Catch::Contains("N in [1, 64]"));
  auto empty = model.run({{"x", randomTensor(DType::F32, {0, 29}, rng)}});
  REQUIRE_FALSE(empty.has_value());
  CHECK_THAT(empty.error().message(), Catch::Contains("N in [1, 64]"));
  auto wrongFeatures = model.run({{"x", randomTensor(DType::F32, {3, 28}, rng)}});
  REQUIRE_FALSE(wrongFeatures.has_value());
  CHECK(wrongFeatures.error().message() == "input 'x' dim 1 is 29, got 28");
}

TEST_CASE("the size bucket bounds: powers of two, or a list checked against the range",
          "[compile][symbolic]") {
  auto bucketsFor = [](int64_t min, int64_t max, std::optional<std::vector<int64_t>> requested) {
    Graph graph("g");
    Tensor x = graph.input("x", {kiln::dim("N", min, max), 3});
    graph.output("y", relu(x));
    REQUIRE(graph.finalize().has_value());
    return compiler::sizeBucketBounds(graph.ir(), requested);
  };
  using Bounds = std::vector<int64_t>;
  CHECK(bucketsFor(1, 64, std::nullopt) == Bounds{1, 2, 4, 8, 16, 32, 64});
  CHECK(bucketsFor(3, 100, std::nullopt) == Bounds{3, 4, 8, 16, 32, 64, 100});
  CHECK(bucketsFor(0, 5, std::nullopt) == Bounds{1, 2, 4, 5}); // size 0 runs in the first
  CHECK(bucketsFor(7, 7, std::nullopt) == Bounds{7});
  CHECK(bucketsFor(3, 100, Bounds{8, 100, 8}) == Bounds{8, 100});
  CHECK(bucketsFor(3, 100, Bounds{}) == Bounds{100});
  auto outside = bucketsFor(3, 100, Bounds{2, 50});
  REQUIRE_FALSE(outside.has_value());
  CHECK(outside.error().message() == "size bucket bound 2 is outside the range of N in [3, 100]");

  Graph two("two");
  Tensor x = two.input("x", {kiln::dim("N", 1, 8), kiln::dim("T", 1, 8)});
  two.output("y", relu(x));
  REQUIRE(two.finalize().has_value());
  CHECK(compiler::sizeBucketBounds(two.ir(), std::nullopt) == Bounds{8});
  auto listed = compiler::sizeBucketBounds(two.ir(), Bounds{4});
  REQUIRE_FALSE(listed.has_value());
  CHECK(listed.error().message() == "size buckets take a graph with one size symbol; @two has 2");
}

} // namespace
TEST_CASE("a CPU bundle of a symbolic model carries its size buckets and runs every size",
          "[compile][symbolic][aot]") {
  Graph graph("mlp");
  buildMlp(graph);
  REQUIRE(graph.finalize().has_value());
  CompileOptions options = cpuOptions();
  options.sizeBuckets = std::vector<int64_t>{1, 6, 20};
  compiler::AotOptions aot;
  aot.compile = options;
  aot.weights = graph.paramValues();
  compiler::AotReport report;
  auto bytes = compiler::buildBundle(graph.ir(), aot, &report);
  REQUIRE(bytes.has_value());
  CHECK_THAT(report.sizeBuckets, Catch::StartsWith("N in [1, 64]: "));
  auto loaded = runtime::bundle::loadBundleFromBytes(*bytes, {}, "mlp.kiln");
  REQUIRE(loaded.has_value());
  CHECK(loaded->weightsBound);
  CompiledModel &model = loaded->model;

  // The same buckets as compile() makes, and the same outputs bit for bit at every size.
  auto compiled = compile(graph.ir(), options);
  REQUIRE(compiled.has_value());
  CHECK(model.sizeBucketBounds() == compiled->sizeBucketBounds());
  CHECK(model.sizeBucketBounds().size() >= 2);
  REQUIRE(compiled->bindParams(graph.paramValues()).has_value());
  Rng rng(freshSeed());
  for (int64_t batch : {1, 5, 20, 64}) {
    CAPTURE(batch);
    NamedTensors inputs = inputsAt(graph, batch, rng);
    auto fromBundle = model.run(inputs);
    auto fromCompile = compiled->run(inputs);
    REQUIRE(fromBundle.has_value());
    REQUIRE(fromCompile.has_value());
    for (const auto &[name, tensor] : *fromCompile) {
      CAPTURE(name);
      CHECK(fromBundle->at(name).shape() == tensor.shape());
      CHECK(compareTensors(fromBundle->at(name), tensor, Tolerance{0, 0}).ok);
    }
  }
  // Fresh parameters, and sizes at and around each bound, against the fp64 reference.
  checkEveryBatch(graph, model, {1, 2, 6, 7, 21, 64, 13});

  auto outside = model.run({{"x", randomTensor(DType::F32, {65, 29}, rng)}});
  REQUIRE_FALSE(outside.has_value());
  CHECK_THAT(outside.error().message(),
             Catch::Contains("N in [1, 64]") && Catch::Contains("the actual size 65"));
}

TEST_CASE("a size outside the range compiles the model again when asked, saying why",
          "[compile][symbolic]") {
  Graph graph("mlp");
  buildMlp(graph);
  REQUIRE(graph.finalize().has_value());
  std::ostringstream log;
  CompileOptions options = cpuOptions();
  options.recompileOutOfRange = true;
  options.recompileLog = &log;
  CompiledModel model = compileOrFail(graph.ir(), options);
  NamedTensors params = graph.paramValues();
  REQUIRE(model.bindParams(params).has_value());
  Rng rng(freshSeed());
  // Each run against the reference on the graph widened to hold its size.
  auto check = [&](int64_t batch) {
    CAPTURE(batch);
    NamedTensors inputs = inputsAt(graph, batch, rng);
    auto outputs = model.run(inputs, RunOptions{.poisonBuffers = true});
    REQUIRE(outputs.has_value());
    auto widened = ir::widenSymbols(graph.ir(), std::vector<ir::SizeSymbol>{{"N", 1, 512}});
    REQUIRE(widened.has_value());
    NamedTensors all = inputs;
    all.insert(params.begin(), params.end());
    auto expected = ir::interpret(**widened, all);
    REQUIRE(expected.has_value());
    checkOutputsMatch(**widened, *outputs, *expected);
  };
  check(100); // outside N in [1, 64]: compiled again for [1, 128]
  std::vector<SizeRecompile> recompiles = model.sizeRecompiles();
  REQUIRE(recompiles.size() == 1);
  CHECK(recompiles[0].input == "x");
  CHECK(recompiles[0].dim == 0);
  CHECK(recompiles[0].size == 100);
  CHECK(recompiles[0].before == ir::SizeSymbol{"N", 1, 64});
  CHECK(recompiles[0].after == ir::SizeSymbol{"N", 1, 128});
  CHECK_THAT(log.str(), Catch::StartsWith("kiln: input 'x' dim 0 is 100, outside N in [1, 64]: "
                                          "compiled again for N in [1, 128] in "));
  check(128); // held by the recompiled range: no compile
  check(7);   // the model's own range
  CHECK(model.sizeRecompiles().size() == 1);
  check(300); // outside both: [1, 512]
  REQUIRE(model.sizeRecompiles().size() == 2);
  CHECK(model.sizeRecompiles()[1].before == ir::SizeSymbol{"N", 1, 128});
  CHECK(model.sizeRecompiles()[1].after == ir::SizeSymbol{"N", 1, 512});
  // The recompiled model reads the parameters bound later.
  params = graph.paramValues();
  for (auto &[name, tensor] : params)
    tensor = randomTensor(tensor.dtype(), tensor.shape(), rng);
  REQUIRE(model.bindParams(params).has_value());
  check(200);
  check(3);

  // A recompile that fails is the run's error, naming the size and both ranges.
  CompiledModel refusing = compileOrFail(graph.ir(), cpuOptions());
  REQUIRE(refusing.bindParams(params).has_value());
  REQUIRE(refusing
              .setSizeRecompiler([](std::span<const ir::SizeSymbol>) -> Expected<CompiledModel> {
                return makeError(ErrorCode::Unsupported, "no compiler here");
              })
              .has_value());
  auto failed = refusing.run(inputsAt(graph, 65, rng));
  REQUIRE_FALSE(failed.has_value());
  CHECK(failed.error().message() == "input 'x' dim 0 is 65, outside N in [1, 64], and compiling "
                                    "the model for N in [1, 128] failed: no compiler here");
  CHECK(refusing.sizeRecompiles().empty());
  CompiledModel fixed =
      compileOrFail(*ir::specialize(graph.ir(), {{"N", 4}}).value(), cpuOptions());
  CHECK_FALSE(fixed.setSizeRecompiler({}).has_value());
}

} // namespace kiln::test
