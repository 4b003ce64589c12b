// cuDNN's conv2d candidate on a real GPU: fused conv2d groups (odd sizes,
// both layouts, every float dtype cuDNN takes, groups, stride, dilation) run
// through makeCudnnKernel against the fp64 reference interpreter; a record's
// configuration replays the same choice; two streams keep their own workspaces.
#include "GpuTestDevice.h"

#include "compiler/CompileTestUtil.h"
#include "compiler/tuning/CudnnCandidate.h"
#include "ir/graph/Interpreter.h"
#include "runtime/cudnn/CudnnLibrary.h"
#include "support/Tolerance.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <array>

using namespace kiln;
using runtime::DevicePtr;
using runtime::Stream;
using runtime::cuda::CudaDevice;
using runtime::cudnn::CudnnConv2D;

namespace {

template <typename T> T valueOf(Expected<T> result) {
  if (!result)
    FAIL(result.error().str());
  return std::move(*result);
}

void ok(Expected<void> result) {
  if (!result)
    FAIL(result.error().str());
}

struct ConvCase {
  const char *layout;
  DType dtype;
  std::vector<int64_t> x, w;
  std::vector<int64_t> stride, padding, dilation;
  int64_t groups;
  bool bias, relu;
};

/// The case as a graph the way nn::Conv2D builds it: conv2d, a bias
/// reshaped to broadcast over the channels, relu.
std::unique_ptr<ir::Graph> buildGraph(const ConvCase &c) {
  auto graph = std::make_unique<ir::Graph>("cudnn_case");
  ir::Value *x = valueOf(graph->addInput("x", ir::TensorType{c.dtype, c.x}));
  ir::Value *w = valueOf(graph->addParam("w", ir::TensorType{c.dtype, c.w}));
  ir::AttrMap attrs{{"layout", std::string(c.layout)},
                    {"stride", c.stride},
                    {"padding", c.padding},
                    {"dilation", c.dilation},
                    {"groups", c.groups},
                    {"accumulate", c.dtype == DType::F64 ? DType::F64 : DType::F32}};
  ir::Value *y = valueOf(graph->addNode(ir::OpKind::Conv2D, {x, w}, attrs));
  if (c.bias) {
    int64_t channels = c.w[0];
    ir::Value *b = valueOf(graph->addParam("b", ir::TensorType{c.dtype, {channels}}));
    if (std::string(c.layout) == "nchw")
      b = valueOf(graph->addNode(ir::OpKind::Reshape, {b},
                                 {{"shape", std::vector<int64_t>{channels, 1, 1}}}));
    y = valueOf(graph->addNode(ir::OpKind::Add, {y, b}));
  }
  if (c.relu)
    y = valueOf(graph->addNode(ir::OpKind::Relu, {y}));
  ok(graph->addOutput("y", y));
  return graph;
}

/// Device memory released at scope end.
struct DeviceBuffer {
  CudaDevice &device;
  DevicePtr ptr = 0;
  DeviceBuffer(CudaDevice &d, int64_t bytes) : device(d), ptr(valueOf(d.allocate(bytes))) {}
  ~DeviceBuffer() { device.free(ptr); }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
};

/// One case prepared: graph, spec, random tensors, the reference, and the
/// kernel's arguments uploaded (output poisoned).
struct PreparedCase {
  std::unique_ptr<ir::Graph> graph;
  tuning::CudnnConvSpec spec;
  HostTensor expected;
  std::vector<std::unique_ptr<DeviceBuffer>> buffers; ///< in kernel argument order
  std::vector<DevicePtr> args;
};

void prepare(PreparedCase &prepared, const ConvCase &c, uint64_t seed) {
  CudaDevice &device = gpuTestDevice();
  prepared.graph = buildGraph(c);
  passes::FusionPlan plan = valueOf(passes::planFusion(*prepared.graph));
  const passes::FusionGroup *group = nullptr;
  for (const passes::FusionGroup &candidate : plan.groups)
    if (candidate.kind == passes::GroupKind::Contraction)
      group = &candidate;
  REQUIRE(group);
  REQUIRE(plan.groups.size() == 1); // the whole case is the one conv2d group
  auto spec = tuning::cudnnConvSpecFor(*prepared.graph, *group);
  if (auto *why = std::get_if<std::string>(&spec))
    FAIL("cuDNN refused the group: " << *why);
  prepared.spec = std::get<tuning::CudnnConvSpec>(spec);

  Rng rng(seed);
  NamedTensors tensors;
  for (const ir::Value *value : group->inputs)
    tensors.insert_or_assign(value->name(),
                             test::randomTensor(value->type().dtype, value->type().shape, rng));
  NamedTensors outputs = valueOf(ir::interpret(*prepared.graph, tensors));
  prepared.expected = outputs.at("y");

  for (const ir::Value *value : group->inputs) {
    const HostTensor &tensor = tensors.at(value->name());
    auto buffer = std::make_unique<DeviceBuffer>(device, static_cast<int64_t>(tensor.byteSize()));
    ok(device.copyToDevice(buffer->ptr, tensor.bytes().data(),
                           static_cast<int64_t>(tensor.byteSize()), Stream{}));
    prepared.args.push_back(buffer->ptr);
    prepared.buffers.push_back(std::move(buffer));
  }
  auto output =
      std::make_unique<DeviceBuffer>(device, static_cast<int64_t>(prepared.expected.byteSize()));
  prepared.args.push_back(output->ptr);
  prepared.buffers.push_back(std::move(output));
  ok(device.synchronize(Stream{}));
}

/// Poisons the output, launches on `stream`, and compares with the reference.
void runAndCompare(const PreparedCase &prepared, const CudnnConv2D &kernel, Stream stream) {
  CudaDevice &device = gpuTestDevice();
  int64_t bytes = static_cast<int64_t>(prepared.expected.byteSize());
  ok(device.fill(prepared.args.back(), 0xff, bytes, stream));
  ok(kernel.launch(prepared.args.data(), stream));
  HostTensor actual(prepared.expected.dtype(), prepared.expected.shape());
  ok(device.copyToHost(actual.bytes().data(), prepared.args.back(), bytes, stream));
  ok(device.synchronize(stream));
  Comparison comparison =
      compareTensors(actual, prepared.expected, toleranceFor(prepared.expected.dtype()));
  INFO("cuDNN " << kernel.configText() << ": " << comparison.mismatches << " mismatches, first "
                << comparison.firstMismatchStr << ", max abs error " << comparison.maxAbsError);
  CHECK(comparison.ok);
}

const ConvCase kCases[] = {
    {"nchw", DType::F32, {2, 3, 9, 7}, {5, 3, 3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, true, true},
    {"nchw",
     DType::F32,
     {1, 4, 13, 11},
     {6, 2, 3, 5},
     {2, 1},
     {1, 1, 2, 2},
     {1, 2},
     2,
     false,
     true},
    {"nhwc", DType::F16, {2, 7, 9, 8}, {16, 3, 3, 8}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 1, true, false},
    {"nchw", DType::BF16, {3, 5, 6, 6}, {7, 5, 1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1, true, true},
    {"nhwc",
     DType::F32,
     {1, 17, 17, 3},
     {8, 5, 5, 3},
     {2, 2},
     {2, 2, 2, 2},
     {1, 1},
     1,
     false,
     false},
    {"nchw", DType::F64, {1, 2, 5, 5}, {3, 2, 3, 3}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1, true, true},
};

} // namespace

TEST_CASE("cuDNN conv2d groups match the fp64 reference", "[gpu][cudnn]") {
  auto library = runtime::cudnn::cudnnLibrary();
  if (!library)
    FAIL("cuDNN is not loadable on this GPU machine: " << library.error().str());
  auto selection =
      GENERATE(runtime::cudnn::CudnnSelection::Measured, runtime::cudnn::CudnnSelection::Heuristic);
  for (const ConvCase &c : kCases) {
    uint64_t seed = test::freshSeed();
    PreparedCase prepared;
    prepare(prepared, c, seed);
    INFO(prepared.spec.problem.str()
         << ", seed " << seed << ", "
         << (selection == runtime::cudnn::CudnnSelection::Measured ? "measured" : "heuristic"));
    runtime::cudnn::CudnnConvOptions options;
    options.selection = selection;
    auto kernel = valueOf(tuning::makeCudnnKernel(prepared.spec, gpuTestDevice(), options));
    CHECK_THAT(kernel->configText(), Catch::StartsWith("algo="));
    runAndCompare(prepared, *kernel, Stream{});
  }
}

TEST_CASE("a cuDNN record's configuration replays its choice", "[gpu][cudnn]") {
  PreparedCase prepared;
  uint64_t seed = test::freshSeed();
  prepare(prepared, kCases[0], seed);
  INFO("seed " << seed);
  auto measured = valueOf(tuning::makeCudnnKernel(prepared.spec, gpuTestDevice()));
  runtime::cudnn::CudnnConvOptions options;
  options.fixed = valueOf(runtime::cudnn::parseCudnnChoice(measured->configText()));
  auto replayed = valueOf(tuning::makeCudnnKernel(prepared.spec, gpuTestDevice(), options));
  CHECK(replayed->configText() == measured->configText());
  runAndCompare(prepared, *replayed, Stream{});
}

TEST_CASE("cuDNN launches on two streams use their own handles and workspaces", "[gpu][cudnn]") {
  CudaDevice &device = gpuTestDevice();
  PreparedCase first, second;
  uint64_t seed = test::freshSeed();
  prepare(first, kCases[1], seed);
  prepare(second, kCases[1], seed + 1);
  INFO("seed " << seed);
  auto kernel = valueOf(tuning::makeCudnnKernel(first.spec, device));
  Stream a = valueOf(device.createStream());
  Stream b = valueOf(device.createStream());
  ok(kernel->prepare(a));
  ok(kernel->prepare(b));
  for (int round = 0; round < 3; ++round) {
    runAndCompare(first, *kernel, a);
    runAndCompare(second, *kernel, b);
  }
  kernel.reset(); // its handles go before the streams they were bound to
  device.destroyStream(a);
  device.destroyStream(b);
}
