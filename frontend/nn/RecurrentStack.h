// Stacking recurrences into layers and directions: what nn::LSTM and nn::GRU share around
// their cells (frontend/Recurrence.h): initial states split per layer and direction, each
// layer reading the previous one's sequence, the final states stacked in PyTorch's order.
#pragma once

#include "frontend/Recurrence.h"
#include "support/Error.h"

#include <functional>
#include <optional>
#include <string>
#include <utility>

namespace kiln::nn {

/// What a recurrent layer returns when asked for its states too.
struct RecurrentOutputs {
  Tensor output; ///< [B, T, D*U] with returnSequences, else the last hidden state [B, D*U]
  Tensor hidden; ///< final hidden states [layers * directions, B, U] (PyTorch's h_n)
  Tensor cell;   ///< LSTM: final cell states, like `hidden` (PyTorch's c_n)
};

struct RecurrentStackShape {
  int64_t layers = 1;
  bool bidirectional = false;
  bool returnSequences = false;
  /// Build RecurrentOutputs::hidden and ::cell (a layer applied as usual leaves them out).
  bool wantStates = false;
};

/// Why `x` and the initial states cannot feed a recurrent layer of `gates` gates of `units`
/// (checked once for both LSTM and GRU), or nullopt when they can. The states must be
/// [layers * directions, B, units] tensors of x's graph, or empty.
std::optional<Error>
checkRecurrentInputs(Tensor x, std::initializer_list<std::pair<Tensor, const char *>> states,
                     int64_t gates, int64_t units, const RecurrentStackShape &shape);

/// The suffix of layer `layer`'s parameters in direction `reverse`: "_l<k>" above the first
/// layer, "_reverse" for the backward direction (PyTorch's names: weight_l1_reverse).
std::string recurrentParamSuffix(int64_t layer, bool reverse);

/// Runs `recurrence(layer, reverse, input, initialHidden, initialCell)` for every layer and
/// direction. `h0` and `c0` are [layers * directions, B, U] or empty (zeros); `c0` is for
/// LSTMs only.
RecurrentOutputs stackRecurrences(
    Tensor x, Tensor h0, Tensor c0, const RecurrentStackShape &shape,
    const std::function<RecurrenceResult(int64_t layer, bool reverse, Tensor input,
                                         const RecurrenceOptions &options)> &recurrence,
    const std::source_location &loc);

} // namespace kiln::nn
