// nn::Embedding: integer token ids -> learned vectors.
#pragma once

#include "frontend/nn/Layer.h"

namespace kiln::nn {

struct EmbeddingConfig {
  int64_t vocabularySize = 0;
  int64_t dim = 0;
  /// Keras's default: uniform in [-0.05, 0.05).
  Initializer initializer = uniformInitializer(-0.05, 0.05);
  DType dtype = DType::F32;
  std::string name = {};
};

/// ids of any shape S (an integer dtype) -> S + [dim], a gather on axis 0 of
/// weight [vocabularySize, dim]. An id out of range fails when the graph runs.
class Embedding : public ConfiguredLayer<EmbeddingConfig> {
public:
  explicit Embedding(EmbeddingConfig config);
  Embedding(int64_t vocabularySize, int64_t dim, std::string name = {});

protected:
  Tensor forward(Graph &graph, Tensor ids, const std::source_location &loc) override;
};

} // namespace kiln::nn
