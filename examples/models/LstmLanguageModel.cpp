// An LSTM language model.
#include "examples/models/LstmLanguageModel.h"

#include "frontend/nn/Layers.h"

namespace kiln::examples {

using namespace kiln::nn;

Tensor buildLstmLanguageModel(Graph &graph, const LstmLanguageModelConfig &config) {
  Tensor tokens = graph.input("tokens", {config.batch, config.sequenceLength}, DType::I64);
  Sequential model(Embedding(config.vocabularySize, config.embeddingDim),
                   LSTM(config.units, /*returnSequences=*/config.perStepPredictions),
                   Dense(config.vocabularySize, headActivation(config.head)));
  Tensor result = model(graph, tokens);
  graph.output(headOutputName(config.head), result);
  return result;
}

} // namespace kiln::examples
