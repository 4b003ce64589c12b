// How far a model compiled under a precision policy strays from the fp64
// reference: `kiln check-numerics`, `kiln run --check` under a policy and the
// precision compile tests all measure it here (docs/precision.md).
#pragma once

#include "compiler/Compile.h"
#include "ir/graph/Graph.h"
#include "support/HostTensor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

/// The error of one output against the reference.
struct OutputNumerics {
  std::string name;
  std::string type;       ///< the compiled output's type, e.g. "f32[8,10]"
  double scale = 0;       ///< the largest finite |reference| of the output
  double maxAbsError = 0; ///< the largest |compiled - reference|
  double maxRelError = 0; ///< maxAbsError / scale
  double tolerance = 0;   ///< the largest error allowed, relative to scale
  int64_t mismatches = 0; ///< elements beyond tolerance * scale (NaN and inf must match)
  std::string firstMismatch; ///< "index 17: got 1.5, expected 1.25", or empty
  bool ok() const { return mismatches == 0; }
};

/// The reference a policy is judged against: `graph` as written, evaluated by
/// the reference interpreter with every f32 value held in f64
/// (ir::widenGraph), on `inputsAndParams` (f32 tensors are widened exactly).
/// Outputs that were f32 come back as f64.
Expected<NamedTensors> referenceInF64(const ir::Graph &graph, const NamedTensors &inputsAndParams);

/// What a compiled model computes with when `tensors` are passed to run()
/// with `params` bound: the inputs and the bound parameters, except that a
/// parameter passed in `tensors` wins over its bound value, as in run(). The
/// reference must see the same values, or a check compares different models.
NamedTensors runBindings(const NamedTensors &tensors, const NamedTensors &params);

/// Compares every output in `reference` with the one of the same name in
/// `actual` (converted to the reference's dtype): an element passes when it
/// is within `tolerance` times the output's scale of the reference.
std::vector<OutputNumerics> compareWithReference(const NamedTensors &actual,
                                                 const NamedTensors &reference, double tolerance);

/// One check of a model under a policy.
struct NumericsCheck {
  CompileReport compile;
  std::vector<OutputNumerics> outputs;
  bool ok() const;
};

/// Compiles `graph` with `options` (options.precision is the policy), runs it
/// on `inputs` with `params` bound, evaluates referenceInF64 on the same
/// tensors and compares every output within `tolerance` (the policy's own,
/// passes::precisionTolerance, unless the caller overrides it).
Expected<NumericsCheck> checkNumerics(const ir::Graph &graph, const NamedTensors &inputs,
                                      const NamedTensors &params, const CompileOptions &options,
                                      double tolerance);

} // namespace kiln
