// Shape arithmetic on symbolic sizes at import (docs/onnx.md, import step 3). Exporters
// compute a reshape's target from the input's shape (PyTorch's `x.view(x.size(0), -1)` is
// Shape -> Gather -> Unsqueeze -> Concat -> Reshape); with a symbolic batch those values are
// sizes over the size symbols, which the importer computes here as SizeExprs, so the Reshape
// gets symbolic sizes instead of a value kiln would need at run time.
#pragma once

#include "frontend/onnx/OnnxNode.h"

#include <string_view>

namespace kiln::onnx {

/// Whether the importer computes `opType` on symbolic sizes: Shape and Size of a tensor with
/// symbolic dims, and Gather, Slice, Concat, Unsqueeze, Squeeze, Cast, Identity, Add, Sub,
/// Mul and Div of sizes.
bool foldsSymbolicSizes(std::string_view opType);

/// Output 0 of `node` (one of foldsSymbolicSizes's ops) as sizes; an error names what does
/// not fold (a float Cast, a Gather with indices computed at run time, a 2-D shape value).
Expected<SizeVector> foldSymbolicSizes(OnnxNode &node);

/// Whether any of `sizes` is symbolic.
bool isSymbolic(const SizeVector &sizes);

/// `sizes` as an i64 tensor of `graph` (0-D or 1-D): its constants, and symbol_size for the
/// symbolic ones, for a model that computes with a shape value, not just reshapes by it.
Tensor sizesTensor(Graph &graph, const SizeVector &sizes);

} // namespace kiln::onnx
