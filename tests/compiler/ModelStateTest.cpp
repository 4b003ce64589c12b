// State a compiled model keeps between runs (CompiledModel::runUpdating):
// outputs written into bound parameters on the CPU and on the simulator
// device, inputs read in place from device buffers (with launch graphs per
// address), parameters copied between models, and the errors of misuse.
#include "CompileTestUtil.h"

#include "runtime/sim/SimDevice.h"

#include <catch2/catch.hpp>

namespace kiln::test {
namespace {

constexpr int64_t kRows = 3, kCols = 7;

CompileOptions optionsFor(TargetKind target) {
  CompileOptions options;
  options.target = target;
  if (target == TargetKind::Sim)
    options.gpuArch = "sm_80";
  return options;
}

/// Outputs "packed" = [w + x, 2v + w] (the next w and v) and "y" = w * x.
struct StatefulModel {
  CompileCase c{"model-state"};
  StatefulModel() {
    Tensor x = c.input("x", {kRows, kCols});
    Tensor w = c.param("w", {kRows, kCols});
    Tensor v = c.param("v", {kRows, kCols});
    c.output("packed", concat({unsqueeze(w + x, {0}), unsqueeze(v * 2.0 + w, {0})}, 0));
    c.output("y", w * x);
  }
  CompiledModel compileBound(TargetKind target) {
    CompiledModel model = compileOrFail(c.graph().ir(), optionsFor(target));
    NamedTensors all = c.tensors();
    REQUIRE(model.bindParams({{"w", all.at("w")}, {"v", all.at("v")}}));
    REQUIRE(model.setStateUpdates({{"packed", 0, "w"}, {"packed", kRows * kCols * 4, "v"}}));
    return model;
  }
};

/// f32 against an fp64 expectation: the state carries f32 rounding of a few
/// additions (cancelling ones included), hence a relative 1e-5 and a margin.
void checkClose(const HostTensor &actual, const std::vector<double> &expected) {
  REQUIRE(actual.numElements() == static_cast<int64_t>(expected.size()));
  for (int64_t i = 0; i < actual.numElements(); ++i)
    CHECK(actual.getDouble(i) ==
          Approx(expected[static_cast<size_t>(i)]).epsilon(1e-5).margin(1e-6));
}

std::vector<double> valuesOf(const HostTensor &tensor) {
  std::vector<double> values;
  for (int64_t i = 0; i < tensor.numElements(); ++i)
    values.push_back(tensor.getDouble(i));
  return values;
}

/// The new state and output after one step from (w, v) with input x.
struct Expected3 {
  std::vector<double> w, v, y;
};
Expected3 stepOf(const std::vector<double> &w, const std::vector<double> &v,
                 const std::vector<double> &x) {
  Expected3 next;
  for (size_t i = 0; i < w.size(); ++i) {
    next.w.push_back(w[i] + x[i]);
    next.v.push_back(2 * v[i] + w[i]);
    next.y.push_back(w[i] * x[i]);
  }
  return next;
}

} // namespace

TEST_CASE("runUpdating writes outputs into bound parameters", "[compiler][state]") {
  TargetKind target = GENERATE(TargetKind::Cpu, TargetKind::Sim);
  CAPTURE(targetKindName(target));
  StatefulModel m;
  CompiledModel model = m.compileBound(target);
  std::vector<double> w = valuesOf(m.c.tensors().at("w")), v = valuesOf(m.c.tensors().at("v"));
  for (int step = 0; step < 3; ++step) {
    HostTensor x = randomTensor(DType::F32, {kRows, kCols}, m.c.rng());
    auto outputs = model.runUpdating({{"x", x}});
    REQUIRE(outputs);
    // The state's output stays where the model runs; the others come back.
    CHECK_FALSE(outputs->contains("packed"));
    Expected3 next = stepOf(w, v, valuesOf(x));
    checkClose(outputs->at("y"), next.y);
    w = next.w;
    v = next.v;
  }
  std::vector<std::string> names = {"w", "v"};
  auto state = model.readParams(names);
  REQUIRE(state);
  checkClose(state->at("w"), w);
  checkClose(state->at("v"), v);

  // A plain run reads the state and leaves it alone, returning every output.
  HostTensor x = randomTensor(DType::F32, {kRows, kCols}, m.c.rng());
  auto plain = model.run({{"x", x}});
  REQUIRE(plain);
  CHECK(plain->contains("packed"));
  checkClose(plain->at("y"), stepOf(w, v, valuesOf(x)).y);
  auto unchanged = model.readParams(names);
  REQUIRE(unchanged);
  checkClose(unchanged->at("w"), w);
}

TEST_CASE("state updates are checked against the plan", "[compiler][state]") {
  StatefulModel m;
  CompiledModel model = compileOrFail(m.c.graph().ir(), optionsFor(TargetKind::Cpu));
  auto refused = [&](std::vector<StateUpdate> updates, const std::string &text) {
    auto set = model.setStateUpdates(std::move(updates));
    REQUIRE_FALSE(set);
    CHECK_THAT(set.error().message(), Catch::Contains(text));
  };
  refused({{"packed", 0, "w"}}, "'w' is not a bound parameter");
  REQUIRE(model.bindParams({{"w", m.c.tensors().at("w")}, {"v", m.c.tensors().at("v")}}));
  refused({{"nothing", 0, "w"}}, "'nothing' is not an output");
  refused({{"packed", 2 * kRows * kCols * 4, "w"}}, "does not fit output 'packed'");
  refused({{"packed", 2, "w"}}, "at byte offset 2");
  refused({{"packed", 0, "w"}, {"y", 0, "w"}}, "'w' is updated twice");

  REQUIRE(model.setStateUpdates({{"y", 0, "w"}}));
  auto passed = model.runUpdating(m.c.tensors());
  REQUIRE_FALSE(passed);
  CHECK_THAT(passed.error().message(), Catch::Contains("'w' is state the model updates"));
  std::vector<std::string> unknown = {"nope"};
  auto read = model.readParams(unknown);
  REQUIRE_FALSE(read);
  CHECK_THAT(read.error().message(), Catch::Contains("'nope' is not a bound parameter"));

  runtime::DevicePtr somewhere = 4096;
  DeviceInputs onDevice;
  onDevice.addresses.emplace("x", somewhere);
  RunOptions options;
  options.deviceInputs = &onDevice;
  auto host = model.run({}, options);
  REQUIRE_FALSE(host);
  CHECK_THAT(host.error().message(), Catch::Contains("model that runs on the host"));
}

TEST_CASE("a device model reads inputs in place from device buffers", "[compiler][state]") {
  StatefulModel m;
  CompiledModel model = m.compileBound(TargetKind::Sim);
  runtime::Device &device = *model.device();
  auto &sim = static_cast<sim::SimDevice &>(device);
  const int64_t bytes = kRows * kCols * 4;
  // Two buffers, used in turn as double-buffered uploads are.
  std::vector<runtime::DevicePtr> buffers;
  for (int i = 0; i < 2; ++i) {
    auto buffer = device.allocate(bytes);
    REQUIRE(buffer);
    buffers.push_back(*buffer);
  }
  std::vector<double> w = valuesOf(m.c.tensors().at("w")), v = valuesOf(m.c.tensors().at("v"));
  int before = 0, after = 0;
  int64_t graphsBefore = sim.census().graphs;
  for (int step = 0; step < 5; ++step) {
    HostTensor x = randomTensor(DType::F32, {kRows, kCols}, m.c.rng());
    runtime::DevicePtr buffer = buffers[static_cast<size_t>(step % 2)];
    REQUIRE(device.copyToDevice(buffer, x.bytes().data(), bytes, runtime::Stream{}));
    REQUIRE(device.synchronize(runtime::Stream{}));
    DeviceInputs inputs;
    inputs.addresses.emplace("x", buffer);
    inputs.beforeKernels = [&](runtime::Stream) -> Expected<void> {
      ++before;
      return {};
    };
    inputs.afterKernels = [&](runtime::Stream) -> Expected<void> {
      ++after;
      return {};
    };
    RunOptions options;
    options.deviceInputs = &inputs;
    options.launchGraph = true;
    auto outputs = model.runUpdating({}, options);
    REQUIRE(outputs);
    Expected3 next = stepOf(w, v, valuesOf(x));
    // A graph replayed for the other buffer's address would read stale data.
    checkClose(outputs->at("y"), next.y);
    w = next.w;
    v = next.v;
  }
  CHECK(before == 5);
  CHECK(after == 5);
  CHECK(sim.census().graphs == graphsBefore + 2); // one per input address
  std::vector<std::string> names = {"w", "v"};
  auto state = model.readParams(names);
  REQUIRE(state);
  checkClose(state->at("w"), w);
  checkClose(state->at("v"), v);

  DeviceInputs both;
  both.addresses.emplace("x", buffers[0]);
  RunOptions options;
  options.deviceInputs = &both;
  auto twice = model.run({{"x", m.c.tensors().at("x")}}, options);
  REQUIRE_FALSE(twice);
  CHECK_THAT(twice.error().message(), Catch::Contains("both as a host tensor and on the device"));
  DeviceInputs stray;
  stray.addresses.emplace("z", buffers[0]);
  options.deviceInputs = &stray;
  auto unknown = model.run({{"x", m.c.tensors().at("x")}}, options);
  REQUIRE_FALSE(unknown);
  CHECK_THAT(unknown.error().message(), Catch::Contains("'z' is not an input"));
  for (runtime::DevicePtr buffer : buffers)
    device.free(buffer);
}

TEST_CASE("parameters copy between models", "[compiler][state]") {
  TargetKind from = GENERATE(TargetKind::Cpu, TargetKind::Sim);
  TargetKind to = GENERATE(TargetKind::Cpu, TargetKind::Sim);
  CAPTURE(targetKindName(from), targetKindName(to));
  StatefulModel m;
  CompiledModel source = m.compileBound(from);
  HostTensor x = randomTensor(DType::F32, {kRows, kCols}, m.c.rng());
  REQUIRE(source.runUpdating({{"x", x}}));
  CompiledModel target = compileOrFail(m.c.graph().ir(), optionsFor(to));
  std::vector<std::string> names = {"w", "v"};
  REQUIRE(target.copyParamsFrom(source, names));
  auto copied = target.readParams(names);
  auto original = source.readParams(names);
  REQUIRE((copied && original));
  for (const std::string &name : names)
    CHECK(std::ranges::equal(copied->at(name).bytes(), original->at(name).bytes()));
  // The copy is the target's own: the source moving on does not change it.
  REQUIRE(source.runUpdating({{"x", x}}));
  auto still = target.readParams(names);
  REQUIRE(still);
  CHECK(std::ranges::equal(still->at("w").bytes(), copied->at("w").bytes()));

  std::vector<std::string> unbound = {"x"};
  auto refused = target.copyParamsFrom(source, unbound);
  REQUIRE_FALSE(refused);
  CHECK_THAT(refused.error().message(), Catch::Contains("copying parameter 'x'"));
}

} // namespace kiln::test
