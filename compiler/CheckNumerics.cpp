// A compiled model's outputs against the fp64 reference.
#include "compiler/CheckNumerics.h"

#include "ir/graph/Interpreter.h"
#include "ir/graph/Widen.h"
#include "support/Tolerance.h"

#include <algorithm>
#include <cfloat>

namespace kiln {

Expected<NamedTensors> referenceInF64(const ir::Graph &graph,
                                      const NamedTensors &inputsAndParams) {
  KILN_TRY(std::unique_ptr<ir::Graph> widened, ir::widenGraph(graph, DType::F32, DType::F64));
  return ir::interpret(*widened, ir::widenTensors(inputsAndParams, DType::F32, DType::F64));
}

std::vector<OutputNumerics> compareWithReference(const NamedTensors &actual,
                                                 const NamedTensors &reference,
                                                 double tolerance) {
  std::vector<OutputNumerics> results;
  for (const auto &[name, expected] : reference) {
    OutputNumerics output;
    output.name = name;
    output.tolerance = tolerance;
    auto found = actual.find(name);
    if (found == actual.end()) {
      output.mismatches = expected.numElements();
      output.firstMismatch = "the compiled model has no such output";
      results.push_back(std::move(output));
      continue;
    }
    output.type = found->second.typeStr();
    HostTensor converted = found->second.dtype() == expected.dtype()
                               ? found->second
                               : found->second.castTo(expected.dtype());
    // The tiniest positive scale instead of compareTensors' usual 1: the
    // error is relative to the output's own magnitude, however small.
    Comparison comparison = compareTensors(
        converted, expected, Tolerance{.rel = 0, .abs = tolerance, .minScale = DBL_MIN});
    output.scale = comparison.scale;
    output.maxAbsError = comparison.maxAbsError;
    output.maxRelError = comparison.maxAbsError / comparison.scale;
    output.mismatches = comparison.ok ? 0 : std::max<int64_t>(comparison.mismatches, 1);
    output.firstMismatch = comparison.firstMismatchStr;
    results.push_back(std::move(output));
  }
  return results;
}

bool NumericsCheck::ok() const {
  return std::all_of(outputs.begin(), outputs.end(),
                     [](const OutputNumerics &output) { return output.ok(); });
}

NamedTensors runBindings(const NamedTensors &tensors, const NamedTensors &params) {
  NamedTensors bindings = params;
  for (const auto &[name, value] : tensors)
    bindings.insert_or_assign(name, value);
  return bindings;
}

Expected<NumericsCheck> checkNumerics(const ir::Graph &graph, const NamedTensors &inputs,
                                      const NamedTensors &params, const CompileOptions &options,
                                      double tolerance) {
  NumericsCheck check;
  KILN_TRY(CompiledModel model, compile(graph, options, &check.compile));
  KILN_TRY_VOID(model.bindParams(params));
  KILN_TRY(NamedTensors outputs, model.run(inputs));
  KILN_TRY(NamedTensors reference, referenceInF64(graph, runBindings(inputs, params)));
  check.outputs = compareWithReference(outputs, reference, tolerance);
  return check;
}

} // namespace kiln
