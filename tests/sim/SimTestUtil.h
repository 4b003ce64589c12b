// Helpers for the simulator tests: GPU kernel skeletons (block.* loops, shared
// allocations, thread.* loops), random parameters and error-text checks.
#pragma once

#include "ir/kernel/Builder.h"
#include "ir/kernel/Evaluator.h"
#include "ir/kernel/Printer.h"
#include "runtime/sim/Simulator.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace kiln::test {

/// The block and thread coordinates a GPU kernel body sees.
struct GpuCoords {
  kir::ExprPtr block[3];
  kir::ExprPtr thread[3];
};

/// A GPU kernel: block loops over `grid`, then `shared` allocations, then
/// thread loops over `block` around `body(coords)` (axes of extent 1 are
/// still bound, as GPU lowering does).
inline kir::Kernel gpuKernel(std::string name, std::vector<kir::BufferPtr> params,
                             std::array<int64_t, 3> grid, std::array<int64_t, 3> block,
                             std::vector<kir::BufferPtr> shared,
                             const std::function<kir::StmtPtr(const GpuCoords &)> &body) {
  using namespace kir;
  VarPtr bv[3] = {makeVar("bx"), makeVar("by"), makeVar("bz")};
  VarPtr tv[3] = {makeVar("tx"), makeVar("ty"), makeVar("tz")};
  GpuCoords coords;
  for (int a = 0; a < 3; ++a) {
    coords.block[a] = kir::ref(bv[a]);
    coords.thread[a] = kir::ref(tv[a]);
  }
  StmtPtr stmt = body(coords);
  const ForKind threadKinds[3] = {ForKind::ThreadX, ForKind::ThreadY, ForKind::ThreadZ};
  const ForKind blockKinds[3] = {ForKind::BlockX, ForKind::BlockY, ForKind::BlockZ};
  for (int a = 0; a < 3; ++a)
    stmt = forRange(tv[a], block[static_cast<size_t>(a)], threadKinds[a], stmt);
  for (auto it = shared.rbegin(); it != shared.rend(); ++it)
    stmt = allocate(*it, stmt);
  for (int a = 0; a < 3; ++a)
    stmt = forRange(bv[a], grid[static_cast<size_t>(a)], blockKinds[a], stmt);
  return Kernel{std::move(name), std::move(params), stmt};
}

/// One tensor per parameter with random values (integers in [-100, 100]).
inline std::vector<HostTensor> randomTensors(const kir::Kernel &kernel, uint64_t seed) {
  Rng rng(seed);
  std::vector<HostTensor> tensors;
  for (const auto &param : kernel.params) {
    HostTensor t(param->dtype, {param->size});
    for (int64_t i = 0; i < param->size; ++i)
      t.setDouble(i, isFloatingPoint(param->dtype) ? rng.uniform(-4.0, 4.0)
                                                   : std::floor(rng.uniform(-100, 101)));
    tensors.push_back(std::move(t));
  }
  return tensors;
}

inline bool sameBytes(const HostTensor &a, const HostTensor &b) {
  return a.byteSize() == b.byteSize() &&
         std::memcmp(a.bytes().data(), b.bytes().data(), a.byteSize()) == 0;
}

/// Runs `kernel` on the simulator and on the kernel IR evaluator from the same
/// random parameters (several seeds) and requires bit-identical memory after.
inline void requireMatchesEvaluator(const kir::Kernel &kernel) {
  for (uint64_t seed : {11u, 12u, 13u}) {
    std::vector<HostTensor> simulated = randomTensors(kernel, seed);
    std::vector<HostTensor> evaluated = simulated;
    auto stats = sim::simulateKernel(kernel, simulated);
    INFO(kir::printKernel(kernel));
    REQUIRE(stats.has_value());
    auto done = kir::evaluateKernel(kernel, evaluated);
    REQUIRE(done.has_value());
    for (size_t i = 0; i < simulated.size(); ++i) {
      INFO("parameter " << kernel.params[i]->name);
      CHECK(sameBytes(simulated[i], evaluated[i]));
    }
  }
}

/// The simulator's error message for a kernel that must fail.
inline std::string simulationError(const kir::Kernel &kernel, std::vector<HostTensor> &params,
                                   const sim::SimOptions &options = {}) {
  auto result = sim::simulateKernel(kernel, params, options);
  INFO(kir::printKernel(kernel));
  REQUIRE_FALSE(result.has_value());
  return result.error().message();
}

} // namespace kiln::test
