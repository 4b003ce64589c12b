// Helpers for the kernel IR tests: raw (non-folding) node constructors, random
// parameter tensors, and a check that two kernels compute bit-identical results.
#pragma once

#include "ir/kernel/Builder.h"
#include "ir/kernel/Evaluator.h"
#include "ir/kernel/Printer.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <vector>

namespace kiln::test {

/// A Binary node built directly, so the Builder's folding does not hide what
/// simplify should do.
inline kir::ExprPtr raw(kir::BinaryOp op, kir::ExprPtr a, kir::ExprPtr b) {
  kir::Type type = kir::isComparison(op) ? kir::Type{DType::Bool, a->type().lanes} : a->type();
  return std::make_shared<kir::Binary>(op, std::move(a), std::move(b), type);
}

inline kir::Kernel makeKernel(std::string name, std::vector<kir::BufferPtr> params,
                              kir::StmtPtr body) {
  return kir::Kernel{std::move(name), std::move(params), std::move(body)};
}

/// Fresh random values for every parameter (outputs too, so an element a
/// kernel fails to write differs between runs with different seeds).
/// Integers are drawn from [-`intRange`, `intRange`].
inline std::vector<HostTensor> randomParams(const kir::Kernel &kernel, uint64_t seed,
                                            double intRange = 100) {
  Rng rng(seed);
  std::vector<HostTensor> tensors;
  for (const auto &param : kernel.params) {
    HostTensor t(param->dtype, {param->size});
    for (int64_t i = 0; i < param->size; ++i) {
      double v = isFloatingPoint(param->dtype) ? rng.uniform(-4.0, 4.0)
                 : param->dtype == DType::Bool ? (rng.uniform() < 0.5 ? 0.0 : 1.0)
                                               : std::floor(rng.uniform(-intRange, intRange + 1));
      t.setDouble(i, v);
    }
    tensors.push_back(std::move(t));
  }
  return tensors;
}

/// Runs both kernels (same parameter list) on the same random inputs, for a
/// few seeds, and requires both to run and every parameter's bytes to match.
inline void requireSameResults(const kir::Kernel &expected, const kir::Kernel &actual,
                               double intRange = 100) {
  REQUIRE(expected.params.size() == actual.params.size());
  for (uint64_t seed : {1u, 2u, 3u}) {
    std::vector<HostTensor> a = randomParams(expected, seed, intRange);
    std::vector<HostTensor> b = a;
    auto ra = kir::evaluateKernel(expected, a);
    auto rb = kir::evaluateKernel(actual, b);
    INFO("expected kernel:\n" << kir::printKernel(expected));
    INFO("actual kernel:\n" << kir::printKernel(actual));
    REQUIRE(ra);
    REQUIRE(rb);
    for (size_t i = 0; i < a.size(); ++i) {
      INFO("parameter " << i << ", seed " << seed);
      REQUIRE(a[i].byteSize() == b[i].byteSize());
      CHECK(std::memcmp(a[i].bytes().data(), b[i].bytes().data(), a[i].byteSize()) == 0);
    }
  }
}

} // namespace kiln::test
