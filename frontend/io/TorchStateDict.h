// PyTorch state dicts onto kiln's nn layers: the names and layouts PyTorch uses (Linear's
// [out, in], the packed in_proj of MultiheadAttention, LSTM/GRU's weight_ih/weight_hh/
// bias_ih/bias_hh per layer and direction, BatchNorm's running statistics) mapped onto the
// parameters the nn layers create, for a DSL model whose layers are named as the PyTorch
// module's attributes are.
#pragma once

#include "frontend/io/Safetensors.h"

#include <string>
#include <vector>

namespace kiln {
class Graph;
}

namespace kiln::io {

/// The graph's parameter values for `stateDict`, without changing the graph. Every tensor
/// must find its parameter and every parameter must get a value: otherwise one error lists
/// each tensor that could not be placed (and why) and each parameter left without a value.
/// `num_batches_tracked` entries (BatchNorm's step counter) are ignored.
Expected<NamedTensors> mapTorchStateDict(const Graph &graph, const TensorMap &stateDict);

} // namespace kiln::io
