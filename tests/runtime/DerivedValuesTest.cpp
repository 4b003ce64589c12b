// Derived values on hand-written host plans: a derived step runs once for bound parameters,
// again after bindParams or a state update gives a parameter it reads a new value, never for a
// parameter it does not read, and a run that passes its own parameter value computes into a
// block of its own without disturbing the kept one. Plus the plan codec's view of them.
#include "runtime/CompiledModel.h"
#include "runtime/bundle/PlanCodec.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <thread>
#include <vector>

using namespace kiln;
using runtime::LaunchPlan;
using runtime::PlanBuffer;
using runtime::Storage;

namespace {

constexpr int64_t kN = 7;
std::atomic<int> derivedRuns{0};

// d[i] = 3 * w[i] (the derived step; counts its runs)
void tripleKernel(void *const *args) {
  ++derivedRuns;
  auto *w = static_cast<const float *>(args[0]);
  auto *d = static_cast<float *>(args[1]);
  for (int64_t i = 0; i < kN; ++i)
    d[i] = 3 * w[i];
}

// y[i] = x[i] + d[i] + v[i]
void sumKernel(void *const *args) {
  auto *x = static_cast<const float *>(args[0]);
  auto *d = static_cast<const float *>(args[1]);
  auto *v = static_cast<const float *>(args[2]);
  auto *y = static_cast<float *>(args[3]);
  for (int64_t i = 0; i < kN; ++i)
    y[i] = x[i] + d[i] + v[i];
}

PlanBuffer f32Buffer(std::string name, Storage storage, int binding = -1) {
  PlanBuffer buffer{std::move(name), DType::F32, {kN}, kN * 4, storage};
  buffer.binding = binding;
  return buffer;
}

/// d = 3 w (derived from parameter w), y = x + d + v: parameter v feeds no derived step.
LaunchPlan makePlan() {
  LaunchPlan plan;
  plan.buffers = {f32Buffer("x", Storage::Input, 0), f32Buffer("w", Storage::Param, 0),
                  f32Buffer("v", Storage::Param, 1), f32Buffer("d", Storage::Derived),
                  f32Buffer("y", Storage::Output, 0)};
  plan.buffers[3].arenaOffset = 64;
  plan.steps = {{"triple", runtime::KernelEntry::host(tripleKernel), {1, 3}},
                {"sum", runtime::KernelEntry::host(sumKernel), {0, 3, 2, 4}}};
  plan.steps[0].derived = true;
  plan.steps[0].derivedFrom = {0};
  plan.inputs = {{"x", 0}};
  plan.params = {{"w", 1}, {"v", 2}};
  plan.outputs = {{"y", 4}};
  plan.derivedBytes = 128;
  return plan;
}

HostTensor filled(float start) {
  HostTensor t(DType::F32, {kN});
  for (int64_t i = 0; i < kN; ++i)
    t.setDouble(i, start + static_cast<float>(i));
  return t;
}

/// y of a run against x + 3 w + v, element by element.
void checkY(const Expected<NamedTensors> &result, float x, float w, float v) {
  REQUIRE(result.has_value());
  const HostTensor &y = result->at("y");
  for (int64_t i = 0; i < kN; ++i)
    CHECK(y.getDouble(i) == (x + i) + 3 * (w + i) + (v + i));
}

} // namespace

TEST_CASE("a derived step runs once for bound parameters and again when one it reads changes",
          "[runtime][derived]") {
  CompiledModel model(makePlan(), nullptr);
  REQUIRE(model.bindParams({{"w", filled(1)}, {"v", filled(10)}}).has_value());
  derivedRuns = 0;
  RunOptions poisoned;
  poisoned.poisonBuffers = true; // the kept block is not the arena: poisoning spares it
  for (int run = 0; run < 3; ++run)
    checkY(model.run({{"x", filled(100)}}, poisoned), 100, 1, 10);
  CHECK(derivedRuns == 1);

  SECTION("a parameter no derived step reads changes nothing derived") {
    REQUIRE(model.bindParams({{"v", filled(20)}}).has_value());
    checkY(model.run({{"x", filled(100)}}), 100, 1, 20);
    CHECK(derivedRuns == 1);
  }
  SECTION("binding the parameter it reads makes it stale") {
    REQUIRE(model.bindParams({{"w", filled(5)}}).has_value());
    checkY(model.run({{"x", filled(100)}}), 100, 5, 10);
    checkY(model.run({{"x", filled(100)}}), 100, 5, 10);
    CHECK(derivedRuns == 2);
  }
  SECTION("a run passing its own value computes for itself and leaves the kept block alone") {
    checkY(model.run({{"x", filled(100)}, {"w", filled(-4)}}), 100, -4, 10);
    CHECK(derivedRuns == 2);
    checkY(model.run({{"x", filled(100)}}), 100, 1, 10);
    CHECK(derivedRuns == 2);
  }
  SECTION("a state update of the parameter makes it stale") {
    // y becomes w: the next run reads d = 3 y.
    REQUIRE(model.setStateUpdates({{"y", 0, "w"}}).has_value());
    auto updated = model.runUpdating({{"x", filled(100)}});
    REQUIRE(updated.has_value());
    CHECK(derivedRuns == 1); // the update itself ran on the kept block
    REQUIRE(model.setStateUpdates({}).has_value());
    auto after = model.run({{"x", filled(0)}});
    REQUIRE(after.has_value());
    CHECK(derivedRuns == 2);
    for (int64_t i = 0; i < kN; ++i) {
      double w = (100 + i) + 3 * (1 + i) + (10 + i);
      CHECK(after->at("y").getDouble(i) == i + 3 * w + (10 + i));
    }
  }
}

TEST_CASE("concurrent runs compute a stale derived value once", "[runtime][derived]") {
  CompiledModel model(makePlan(), nullptr);
  REQUIRE(model.bindParams({{"w", filled(2)}, {"v", filled(3)}}).has_value());
  derivedRuns = 0;
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int run = 0; run < 20; ++run) {
        // Every other thread passes its own w: those never touch the kept block.
        bool own = t % 2 == 1;
        NamedTensors tensors{{"x", filled(static_cast<float>(t))}};
        if (own)
          tensors.emplace("w", filled(-1));
        auto result = model.run(tensors);
        float w = own ? -1.0f : 2.0f;
        for (int64_t i = 0; result && i < kN; ++i)
          wrong += result->at("y").getDouble(i) != (t + i) + 3 * (w + i) + (3 + i);
        wrong += !result.has_value();
      }
    });
  for (auto &thread : threads)
    thread.join();
  CHECK(wrong == 0);
  CHECK(derivedRuns == 1 + 2 * 20); // once kept, and once per run with its own w
}

TEST_CASE("the plan codec keeps derived steps and rejects broken ones", "[runtime][derived]") {
  LaunchPlan plan = makePlan();
  auto decoded = runtime::bundle::decodePlan(runtime::bundle::encodePlan(plan, {}), "plan", false);
  REQUIRE(decoded.has_value());
  const LaunchPlan &back = decoded->plan;
  CHECK(back.derivedBytes == 128);
  CHECK(back.buffers[3].storage == Storage::Derived);
  CHECK(back.buffers[3].arenaOffset == 64);
  CHECK(back.steps[0].derived);
  CHECK(back.steps[0].derivedFrom == std::vector<int>{0});
  CHECK_FALSE(back.steps[1].derived);

  auto rejects = [](const LaunchPlan &broken, const std::string &what) {
    auto valid = runtime::bundle::validatePlan(broken);
    REQUIRE_FALSE(valid.has_value());
    CHECK_THAT(valid.error().message(), Catch::Contains(what));
  };
  LaunchPlan overrun = plan;
  overrun.buffers[3].arenaOffset = 120;
  rejects(overrun, "overruns the 128-byte derived block");
  LaunchPlan badParam = plan;
  badParam.steps[0].derivedFrom = {2};
  rejects(badParam, "names parameter 2 of 2");
  LaunchPlan notDerived = plan;
  notDerived.steps[1].derivedFrom = {1};
  rejects(notDerived, "is not derived but lists parameters");
  LaunchPlan markedByMistake = plan; // "sum" writes the output, which a run must not skip
  markedByMistake.steps[1].derived = true;
  markedByMistake.steps[1].args = {0, 2, 2, 4};
  rejects(markedByMistake, "passes no derived buffer to compute");
  LaunchPlan neverComputed = plan;
  neverComputed.steps[0].derived = false;
  neverComputed.steps[0].derivedFrom.clear();
  rejects(neverComputed, "is computed by no derived step");
}
