// An LSTM language model: Embedding, LSTM, Dense softmax over the vocabulary.
#pragma once

#include "examples/models/ClassifierHead.h"
#include "frontend/Graph.h"

namespace kiln::examples {

struct LstmLanguageModelConfig {
  Dim batch = 8; ///< a size, or a symbol: kiln::dim("N", 1, 64) (docs/dynamic-shapes.md)
  int64_t sequenceLength = 20;
  int64_t vocabularySize = 1000;
  int64_t embeddingDim = 128;
  int64_t units = 128;
  /// true (the default): a next-token distribution at every position,
  /// [batch, sequenceLength, vocabularySize], which is what training a
  /// language model needs. false: only after the last token, [batch, vocabularySize].
  bool perStepPredictions = true;
  /// Softmax for inference; Logits for training (the parameters are the same).
  ClassifierHead head = ClassifierHead::Softmax;
};

/// Embedding(1000, 128) LSTM(128) Dense(1000, softmax). Adds input "tokens"
/// i64[batch, sequenceLength] and output "probabilities" (or "logits" with
/// ClassifierHead::Logits).
Tensor buildLstmLanguageModel(Graph &graph, const LstmLanguageModelConfig &config = {});

} // namespace kiln::examples
