// Outputs a device model writes into the caller's device buffers (RunOptions::deviceOutputs,
// what kiln's Python module does with a CUDA torch tensor's memory), on the simulator device:
// the kernel writes in place, outputs no kernel writes are copied on the device, nothing
// named comes back as a host tensor, and misuse is an error naming what is wrong.
#include "CompileTestUtil.h"

#include "runtime/sim/SimDevice.h"

#include <catch2/catch.hpp>

namespace kiln::test {
namespace {

constexpr int64_t kRows = 5, kCols = 9, kBytes = kRows * kCols * 4;

/// "y" = x * 2 + w (written by a kernel) and "same" = x (an output that is an input).
struct TwoOutputs {
  CompileCase c{"device-outputs"};
  TwoOutputs() {
    Tensor x = c.input("x", {kRows, kCols});
    Tensor w = c.param("w", {kRows, kCols});
    c.output("y", x * 2.0 + w);
    c.output("same", x);
  }
  CompiledModel compile(TargetKind target) {
    CompileOptions options;
    options.target = target;
    if (target == TargetKind::Sim)
      options.gpuArch = "sm_80";
    CompiledModel model = compileOrFail(c.graph().ir(), options);
    REQUIRE(model.bindParams({{"w", c.tensors().at("w")}}));
    return model;
  }
};

/// A device buffer of kBytes filled with 0xFF (NaN), so an unwritten element shows.
runtime::DevicePtr poisonedBuffer(runtime::Device &device) {
  auto buffer = device.allocate(kBytes);
  REQUIRE(buffer);
  REQUIRE(device.fill(*buffer, 0xFF, kBytes, runtime::Stream{}));
  REQUIRE(device.synchronize(runtime::Stream{}));
  return *buffer;
}

HostTensor readBack(runtime::Device &device, runtime::DevicePtr buffer) {
  HostTensor tensor(DType::F32, {kRows, kCols});
  REQUIRE(device.copyToHost(tensor.bytes().data(), buffer, kBytes, runtime::Stream{}));
  REQUIRE(device.synchronize(runtime::Stream{}));
  return tensor;
}

void checkEqual(const HostTensor &actual, const HostTensor &expected) {
  REQUIRE(actual.numElements() == expected.numElements());
  for (int64_t i = 0; i < actual.numElements(); ++i)
    CHECK(actual.getDouble(i) == Approx(expected.getDouble(i)).epsilon(1e-6));
}

TEST_CASE("a device model writes outputs into the caller's device buffers", "[compiler][device]") {
  TwoOutputs m;
  CompiledModel model = m.compile(TargetKind::Sim);
  runtime::Device &device = *model.device();
  NamedTensors expected = m.c.reference();
  HostTensor x = m.c.tensors().at("x");
  bool launchGraph = GENERATE(false, true);
  CAPTURE(launchGraph);

  // Two pairs of buffers in turn: a launch graph captured for one pair must not write the other.
  std::vector<runtime::DevicePtr> ys = {poisonedBuffer(device), poisonedBuffer(device)};
  std::vector<runtime::DevicePtr> sames = {poisonedBuffer(device), poisonedBuffer(device)};
  int64_t graphsBefore = static_cast<sim::SimDevice &>(device).census().graphs;
  for (size_t round = 0; round < 4; ++round) {
    DeviceOutputs outputs;
    outputs.addresses.emplace("y", ys[round % 2]);
    outputs.addresses.emplace("same", sames[round % 2]);
    RunOptions options;
    options.deviceOutputs = &outputs;
    options.poisonBuffers = true;
    options.launchGraph = launchGraph;
    auto results = model.run({{"x", x}}, options);
    REQUIRE(results);
    CHECK(results->empty()); // both stayed on the device
    checkEqual(readBack(device, ys[round % 2]), expected.at("y"));
    checkEqual(readBack(device, sames[round % 2]), x);
  }
  // The kernel writes "y" at the caller's address (not into the run's own output block and
  // then copied), so each "y" buffer's launches are a graph of their own.
  if (launchGraph)
    CHECK(static_cast<sim::SimDevice &>(device).census().graphs == graphsBefore + 2);

  // One output on the device, the other to the host; the input read from the device too.
  runtime::DevicePtr xOnDevice = poisonedBuffer(device);
  REQUIRE(device.copyToDevice(xOnDevice, x.bytes().data(), kBytes, runtime::Stream{}));
  REQUIRE(device.synchronize(runtime::Stream{}));
  runtime::DevicePtr y = poisonedBuffer(device);
  DeviceInputs inputs;
  inputs.addresses.emplace("x", xOnDevice);
  DeviceOutputs outputs;
  outputs.addresses.emplace("y", y);
  RunOptions options;
  options.deviceInputs = &inputs;
  options.deviceOutputs = &outputs;
  auto results = model.run({}, options);
  REQUIRE(results);
  REQUIRE(results->size() == 1);
  checkEqual(results->at("same"), x);
  checkEqual(readBack(device, y), expected.at("y"));

  for (runtime::DevicePtr buffer : {ys[0], ys[1], sames[0], sames[1], xOnDevice, y})
    device.free(buffer);
}

TEST_CASE("device outputs are refused where they cannot be written", "[compiler][device]") {
  TwoOutputs m;
  auto refused = [&](CompiledModel &model, const DeviceOutputs &outputs, const char *message) {
    RunOptions options;
    options.deviceOutputs = &outputs;
    auto results = model.run({{"x", m.c.tensors().at("x")}}, options);
    REQUIRE_FALSE(results);
    CHECK_THAT(results.error().message(), Catch::Contains(message));
  };
  CompiledModel onHost = m.compile(TargetKind::Cpu);
  DeviceOutputs somewhere;
  somewhere.addresses.emplace("y", 4096);
  refused(onHost, somewhere, "device outputs were passed to a model that runs on the host");

  CompiledModel onDevice = m.compile(TargetKind::Sim);
  DeviceOutputs unknown;
  unknown.addresses.emplace("z", 4096);
  refused(onDevice, unknown, "device output 'z' is not an output of the model");
  DeviceOutputs null;
  null.addresses.emplace("y", 0);
  refused(onDevice, null, "device output 'y' has a null address");
  DeviceOutputs misaligned;
  misaligned.addresses.emplace("y", 4096 + 4);
  refused(onDevice, misaligned, "device output 'y' at 0x1004 is not 16-byte aligned");
}

TEST_CASE("a model checks the type of a tensor given by address", "[compiler][device]") {
  TwoOutputs m;
  CompiledModel model = m.compile(TargetKind::Sim);
  CHECK(model.checkBindingType("x", DType::F32, {kRows, kCols}));
  CHECK(model.checkBindingType("same", DType::F32, {kRows, kCols}));
  auto check = [&](std::string_view name, DType dtype, std::vector<int64_t> shape,
                   const char *message) {
    auto checked = model.checkBindingType(name, dtype, shape);
    REQUIRE_FALSE(checked);
    CHECK(checked.error().message() == message);
  };
  check("x", DType::F64, {kRows, kCols}, "input 'x' must be f32[5, 9], got f64[5, 9]");
  check("y", DType::F32, {kCols, kRows}, "output 'y' must be f32[5, 9], got f32[9, 5]");
  check("w", DType::F16, {kRows, kCols}, "parameter 'w' must be f32[5, 9], got f16[5, 9]");
  check("nope", DType::F32, {}, "'nope' is not an input, output or parameter of the model");
}

} // namespace
} // namespace kiln::test
