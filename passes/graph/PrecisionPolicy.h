// Precision policies: which arithmetic a model's contractions use (fp32, tf32,
// bf16 or fp16 operands, fp8 e4m3 operands), and how far from the fp64
// reference each policy lets an output stray. The "precision" pass
// (passes/graph/Precision.cpp) applies a policy; docs/precision.md explains them.
#pragma once

#include "support/DType.h"
#include "support/Error.h"

#include <optional>
#include <string>
#include <string_view>

namespace kiln::passes {

/// How a model's f32 contractions (matmul, batched matmul, conv2d) compute.
/// Every policy accumulates in f32 and keeps reductions, softmax,
/// normalizations and elementwise ops in f32.
enum class PrecisionPolicy {
  Fp32,      ///< nothing changes
  Tf32,      ///< f32 contractions may use tf32 tensor cores (allow_tf32)
  Bf16Mixed, ///< contractions take bf16 operands, give bf16, cast back to f32
  Fp16Mixed, ///< the same with f16
  Fp8,       ///< the same with f8e4m3 (saturating casts), for inference
};

/// Every policy, in the order of the enum.
inline constexpr PrecisionPolicy kPrecisionPolicies[] = {
    PrecisionPolicy::Fp32, PrecisionPolicy::Tf32, PrecisionPolicy::Bf16Mixed,
    PrecisionPolicy::Fp16Mixed, PrecisionPolicy::Fp8};

/// "fp32", "tf32", "bf16-mixed", "fp16-mixed", "fp8".
std::string_view precisionPolicyName(PrecisionPolicy policy);
/// The inverse of precisionPolicyName; an unknown name is an error listing the valid ones.
Expected<PrecisionPolicy> parsePrecisionPolicy(std::string_view name);
/// "fp32, tf32, bf16-mixed, fp16-mixed, fp8", for help texts and errors.
std::string precisionPolicyList();

/// The storage dtype a policy gives contraction operands and results: bf16,
/// f16, f8e4m3; nullopt for fp32 and tf32, which keep f32 operands.
std::optional<DType> contractionOperandDType(PrecisionPolicy policy);

/// log2 of the unit roundoff u of the format a policy's contractions round
/// their operands to: fp32 -24, tf32 -11, bf16 -8, fp16 -11, fp8 e4m3 -4
/// (u = 2^-p for a format with p significand bits, the largest relative error
/// of one round to nearest).
int unitRoundoffLog2(PrecisionPolicy policy);

/// log2 of the policy's tolerance: an output passes when every element is
/// within tolerance * scale of the fp64 reference, scale being the largest
/// |reference| of that output. The rule (docs/precision.md): 8u for the
/// policies that round operands (tf32 2^-8, bf16 2^-5, fp16 2^-8, fp8 2^-1);
/// 2^-16 for fp32, whose error comes from f32 sums over long contractions
/// (about sqrt(K) u, 2^-16 for K = 2^16), not from 8u = 2^-21.
int toleranceLog2(PrecisionPolicy policy);
/// 2^toleranceLog2(policy).
double precisionTolerance(PrecisionPolicy policy);

} // namespace kiln::passes
