// CompiledModel on hand-written launch plans: binding checks, storage kinds,
// output copies, poisoning, concurrent runs and borrowed inputs (no compiler involved).
#include "runtime/CompiledModel.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <memory>
#include <thread>
#include <utility>

using namespace kiln;
using runtime::LaunchPlan;
using runtime::PlanBuffer;
using runtime::Storage;

namespace {

constexpr int64_t kN = 5;

// out[i] = a[i] + b[i]
void addKernel(void *const *args) {
  auto *a = static_cast<const float *>(args[0]);
  auto *b = static_cast<const float *>(args[1]);
  auto *out = static_cast<float *>(args[2]);
  for (int64_t i = 0; i < kN; ++i)
    out[i] = a[i] + b[i];
}

// out[i] = 2 * a[i]
void doubleKernel(void *const *args) {
  auto *a = static_cast<const float *>(args[0]);
  auto *out = static_cast<float *>(args[1]);
  for (int64_t i = 0; i < kN; ++i)
    out[i] = 2 * a[i];
}

PlanBuffer f32Buffer(std::string name, Storage storage, int binding = -1) {
  PlanBuffer buffer{std::move(name), DType::F32, {kN}, kN * 4, storage};
  buffer.binding = binding;
  return buffer;
}

/// x (input) + w (param) -> t (arena); y = 2 * t (output); z = reshape(t) as
/// a second output (an alias copied at the end); w also output as "w_out".
LaunchPlan makePlan() {
  LaunchPlan plan;
  plan.buffers = {f32Buffer("x", Storage::Input, 0), f32Buffer("w", Storage::Param, 0),
                  f32Buffer("t", Storage::Arena), f32Buffer("y", Storage::Output, 0),
                  f32Buffer("z", Storage::Alias)};
  plan.buffers[4].aliasOf = 2;
  plan.buffers[2].arenaOffset = 64;
  plan.steps = {{"add", runtime::KernelEntry::host(addKernel), {0, 1, 2}},
                {"double", runtime::KernelEntry::host(doubleKernel), {2, 3}}};
  plan.inputs = {{"x", 0}};
  plan.params = {{"w", 1}};
  plan.outputs = {{"y", 3}, {"z", 4}, {"w_out", 1}};
  plan.arenaBytes = 128;
  plan.unplannedBytes = 64;
  return plan;
}

HostTensor vec(std::vector<double> values) {
  HostTensor t(DType::F32, {kN});
  for (size_t i = 0; i < values.size(); ++i)
    t.setDouble(static_cast<int64_t>(i), values[i]);
  return t;
}

} // namespace

TEST_CASE("CompiledModel runs a plan and copies alias and parameter outputs", "[runtime]") {
  CompiledModel model(makePlan(), nullptr);
  NamedTensors in{{"x", vec({1, 2, 3, 4, 5})}, {"w", vec({10, 20, 30, 40, 50})}};
  auto out = model.run(in, {.poisonBuffers = true});
  REQUIRE(out.has_value());
  REQUIRE(out->size() == 3);
  for (int64_t i = 0; i < kN; ++i) {
    double t = (i + 1) * 11.0;
    CHECK(out->at("y").getDouble(i) == 2 * t);
    CHECK(out->at("z").getDouble(i) == t);
    CHECK(out->at("w_out").getDouble(i) == (i + 1) * 10.0);
  }
}

TEST_CASE("CompiledModel writes a run's outputs into recycled tensors that match",
          "[runtime]") {
  CompiledModel model(makePlan(), nullptr);
  auto first = model.run({{"x", vec({1, 2, 3, 4, 5})}, {"w", vec({10, 20, 30, 40, 50})}});
  REQUIRE(first.has_value());
  const uint8_t *yBytes = first->at("y").bytes().data();
  const uint8_t *zBytes = first->at("z").bytes().data();
  // A tensor of the wrong shape is not written into: it stays in the map.
  first->insert_or_assign("w_out", HostTensor(DType::F32, {kN, 1}));

  NamedTensors recycled = std::move(*first);
  RunOptions options;
  options.recycledOutputs = &recycled;
  auto second = model.run({{"x", vec({5, 4, 3, 2, 1})}, {"w", vec({1, 1, 1, 1, 1})}}, options);
  REQUIRE(second.has_value());
  CHECK(second->at("y").bytes().data() == yBytes);
  CHECK(second->at("z").bytes().data() == zBytes);
  for (int64_t i = 0; i < kN; ++i) {
    double t = (kN - i) + 1.0;
    CHECK(second->at("y").getDouble(i) == 2 * t);
    CHECK(second->at("z").getDouble(i) == t);
    CHECK(second->at("w_out").getDouble(i) == 1.0);
  }
  CHECK(second->at("w_out").shape() == std::vector<int64_t>{kN});
  REQUIRE(recycled.size() == 1);
  CHECK(recycled.at("w_out").shape() == std::vector<int64_t>{kN, 1});
}

TEST_CASE("CompiledModel names a missing, unknown or mistyped tensor", "[runtime]") {
  CompiledModel model(makePlan(), nullptr);
  auto missingInput = model.run({{"w", vec({})}});
  REQUIRE_FALSE(missingInput.has_value());
  CHECK(missingInput.error().message() == "missing input 'x'");

  auto missingParam = model.run({{"x", vec({})}});
  REQUIRE_FALSE(missingParam.has_value());
  CHECK_THAT(missingParam.error().message(), Catch::Contains("parameter 'w' has no value"));

  auto unknown = model.run({{"x", vec({})}, {"w", vec({})}, {"q", vec({})}});
  REQUIRE_FALSE(unknown.has_value());
  CHECK_THAT(unknown.error().message(), Catch::Contains("'q' is neither an input nor"));

  auto wrongShape = model.run({{"x", HostTensor(DType::F32, {kN, 1})}, {"w", vec({})}});
  REQUIRE_FALSE(wrongShape.has_value());
  CHECK(wrongShape.error().message() == "input 'x' must be f32[5], got f32[5, 1]");

  auto wrongType = model.run({{"x", HostTensor(DType::F16, {kN})}, {"w", vec({})}});
  REQUIRE_FALSE(wrongType.has_value());
  CHECK(wrongType.error().message() == "input 'x' must be f32[5], got f16[5]");
}

TEST_CASE("CompiledModel binds parameters once and lets run() override them", "[runtime]") {
  CompiledModel model(makePlan(), nullptr);
  REQUIRE(model.bindParams({{"w", vec({1, 1, 1, 1, 1})}}).has_value());
  auto bound = model.run({{"x", vec({1, 2, 3, 4, 5})}});
  REQUIRE(bound.has_value());
  CHECK(bound->at("y").getDouble(4) == 12.0);
  auto overridden = model.run({{"x", vec({1, 2, 3, 4, 5})}, {"w", vec({0, 0, 0, 0, 0})}});
  REQUIRE(overridden.has_value());
  CHECK(overridden->at("y").getDouble(4) == 10.0);

  auto notAParam = model.bindParams({{"x", vec({})}});
  REQUIRE_FALSE(notAParam.has_value());
  CHECK(notAParam.error().message() == "'x' is not a parameter of the model");
  auto badParam = model.bindParams({{"w", HostTensor(DType::F32, {2})}});
  REQUIRE_FALSE(badParam.has_value());
  CHECK(badParam.error().message() == "parameter 'w' must be f32[5], got f32[2]");
}

TEST_CASE("CompiledModel runs correctly from several threads at once", "[runtime]") {
  CompiledModel model(makePlan(), nullptr);
  std::vector<std::thread> threads;
  std::vector<int> failures(8, 0);
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int iteration = 0; iteration < 200; ++iteration) {
        double base = t * 1000 + iteration;
        auto out = model.run({{"x", vec({base, base, base, base, base})},
                              {"w", vec({1, 2, 3, 4, 5})}});
        if (!out || out->at("y").getDouble(2) != 2 * (base + 3) ||
            out->at("z").getDouble(0) != base + 1)
          ++failures[t];
      }
    });
  for (auto &thread : threads)
    thread.join();
  for (int t = 0; t < 8; ++t)
    CHECK(failures[t] == 0);
}

TEST_CASE("CompiledModel reports its memory", "[runtime]") {
  LaunchPlan plan = makePlan();
  plan.constants.push_back(vec({1, 2, 3, 4, 5}));
  CompiledModel model(std::move(plan), nullptr);
  MemoryStats stats = model.memoryStats();
  CHECK(stats.arenaBytes == 128);
  CHECK(stats.unplannedBytes == 64);
  CHECK(stats.constantBytes == 20);
  CHECK(model.numKernels() == 2);
}

namespace {

/// An invoker that doubles its input, or fails on a negative first element
/// (as the simulator fails on an out-of-bounds access).
class DoublingInvoker final : public runtime::KernelInvoker {
public:
  Expected<void> invoke(void *const *args) const override {
    ++calls;
    const auto *a = static_cast<const float *>(args[0]);
    if (a[0] < 0)
      return makeError(ErrorCode::InvalidArgument, "kernel double: a planted failure");
    auto *out = static_cast<float *>(args[1]);
    for (int64_t i = 0; i < kN; ++i)
      out[i] = 2 * a[i];
    return {};
  }
  mutable std::atomic<int> calls{0};
};

} // namespace

TEST_CASE("CompiledModel calls invoker kernels and passes on their errors", "[runtime]") {
  auto invoker = std::make_shared<DoublingInvoker>();
  LaunchPlan plan = makePlan();
  plan.steps[1].entry = runtime::KernelEntry::invoked(invoker);
  CompiledModel model(std::move(plan), nullptr);
  auto ok = model.run({{"x", vec({1, 2, 3, 4, 5})}, {"w", vec({1, 1, 1, 1, 1})}});
  REQUIRE(ok.has_value());
  CHECK(ok->at("y").getDouble(4) == 12.0);
  auto failed = model.run({{"x", vec({-5, 2, 3, 4, 5})}, {"w", vec({1, 1, 1, 1, 1})}});
  REQUIRE_FALSE(failed.has_value());
  CHECK_THAT(failed.error().message(), Catch::Contains("a planted failure"));
  // The failed run gave its arena back: the next run reuses it and succeeds.
  auto again = model.run({{"x", vec({0, 0, 0, 0, 1})}, {"w", vec({1, 1, 1, 1, 1})}});
  REQUIRE(again.has_value());
  CHECK(again->at("y").getDouble(4) == 4.0);
  CHECK(invoker->calls == 3);
}

namespace {

/// The input address the last recordingAddKernel call read.
const void *gAddressRead = nullptr;

void recordingAddKernel(void *const *args) {
  gAddressRead = args[0];
  addKernel(args);
}

} // namespace

TEST_CASE("CompiledModel reads a borrowed input in place and returns outputs of their own",
          "[runtime]") {
  LaunchPlan plan = makePlan();
  plan.steps[0].entry = runtime::KernelEntry::host(recordingAddKernel);
  plan.outputs.push_back({"x_out", 0}); // the input itself as an output
  CompiledModel model(std::move(plan), nullptr);
  // The caller's memory (a numpy array's, say), aligned as kernels assume.
  auto memory = std::make_shared<HostTensor>(vec({1, 2, 3, 4, 5}));
  std::span<const uint8_t> bytes = std::as_const(*memory).bytes();
  NamedTensors in{{"w", vec({10, 20, 30, 40, 50})}};
  // emplace, not an initializer list: that would copy the view (and copies own their bytes).
  in.emplace("x", HostTensor::borrow(DType::F32, {kN}, bytes, memory).value());
  REQUIRE(in.at("x").isBorrowed());
  auto out = model.run(in, {.poisonBuffers = true});
  REQUIRE(out.has_value());
  CHECK(gAddressRead == bytes.data()); // the kernel read the caller's bytes, not a copy
  CHECK(in.at("x").isBorrowed());      // and nothing made the view copy them
  const HostTensor &xOut = out->at("x_out");
  CHECK(std::as_const(xOut).bytes().data() != bytes.data());
  CHECK(!xOut.isBorrowed());
  for (int64_t i = 0; i < kN; ++i) {
    CHECK(xOut.getDouble(i) == i + 1.0);
    CHECK(out->at("y").getDouble(i) == 2 * (i + 1) * 11.0);
  }
}
