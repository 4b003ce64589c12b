// Precision policies: names, operand formats and tolerances.
#include "passes/graph/PrecisionPolicy.h"

#include <fmt/format.h>

#include <cmath>

namespace kiln::passes {

namespace {

struct PolicyRow {
  PrecisionPolicy policy;
  std::string_view name;
  std::optional<DType> operandDType;
  int unitRoundoffLog2;
  int toleranceLog2;
};

// The tolerances follow the rule of docs/precision.md: 8u for the policies
// that round contraction operands to a format with unit roundoff u, and
// 2^-16 for fp32, whose error is that of f32 sums over long contractions
// (about sqrt(K) 2^-24, 2^-16 for K = 2^16), not 8 * 2^-24.
constexpr PolicyRow kPolicies[] = {
    {PrecisionPolicy::Fp32, "fp32", std::nullopt, -24, -16},
    {PrecisionPolicy::Tf32, "tf32", std::nullopt, -11, -8},
    {PrecisionPolicy::Bf16Mixed, "bf16-mixed", DType::BF16, -8, -5},
    {PrecisionPolicy::Fp16Mixed, "fp16-mixed", DType::F16, -11, -8},
    {PrecisionPolicy::Fp8, "fp8", DType::F8E4M3, -4, -1},
};

const PolicyRow &row(PrecisionPolicy policy) {
  for (const PolicyRow &entry : kPolicies)
    if (entry.policy == policy)
      return entry;
  KILN_UNREACHABLE("a PrecisionPolicy without a row in kPolicies");
}

} // namespace

std::string_view precisionPolicyName(PrecisionPolicy policy) { return row(policy).name; }

std::string precisionPolicyList() {
  std::string list;
  for (const PolicyRow &entry : kPolicies)
    list += fmt::format("{}{}", list.empty() ? "" : ", ", entry.name);
  return list;
}

Expected<PrecisionPolicy> parsePrecisionPolicy(std::string_view name) {
  for (const PolicyRow &entry : kPolicies)
    if (entry.name == name)
      return entry.policy;
  return makeError(ErrorCode::InvalidArgument,
                   fmt::format("unknown precision policy '{}': expected one of {}", name,
                               precisionPolicyList()));
}

std::optional<DType> contractionOperandDType(PrecisionPolicy policy) {
  return row(policy).operandDType;
}

int unitRoundoffLog2(PrecisionPolicy policy) { return row(policy).unitRoundoffLog2; }

int toleranceLog2(PrecisionPolicy policy) { return row(policy).toleranceLog2; }

double precisionTolerance(PrecisionPolicy policy) {
  return std::ldexp(1.0, toleranceLog2(policy));
}

} // namespace kiln::passes
