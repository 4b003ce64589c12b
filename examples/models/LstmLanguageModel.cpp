// An LSTM language model.
#include "examples/models/LstmLanguageModel.h"

#include "frontend/nn/Layers.h"

namespace kiln::examples {

using namespace kiln::nn;

Tensor buildLstmLanguageModel(Graph &graph, const LstmLanguageModelConfig &config) {
  Tensor tokens = graph.input("tokens", {config.batch, config.sequenceLength}, DType::I64);
  Sequential model(Embedding(config.vocabularySize, config.embeddingDim),
                   LSTM(config.units, /*returnSequences=*/config.perStepPredictions),
                   Dense(config.vocabularySize, Activation::Softmax));
  Tensor probabilities = model(graph, tokens);
  graph.output("probabilities", probabilities);
  return probabilities;
}

} // namespace kiln::examples
