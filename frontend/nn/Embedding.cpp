// nn::Embedding.
#include "frontend/nn/Embedding.h"

#include "frontend/Ops.h"

#include <fmt/format.h>

namespace kiln::nn {

Embedding::Embedding(EmbeddingConfig config) : ConfiguredLayer("embedding", std::move(config)) {}

Embedding::Embedding(int64_t vocabularySize, int64_t dim, std::string name)
    : Embedding(
          EmbeddingConfig{.vocabularySize = vocabularySize, .dim = dim, .name = std::move(name)}) {}

Tensor Embedding::forward(Graph &graph, Tensor ids, const std::source_location &loc) {
  if (config_.vocabularySize <= 0 || config_.dim <= 0)
    return fail(graph,
                fmt::format("vocabulary size ({}) and dim ({}) must be positive",
                            config_.vocabularySize, config_.dim),
                loc);
  if (!isInteger(ids.dtype()))
    return fail(graph, fmt::format("ids must have an integer dtype, got {}", ids.str()), loc,
                ErrorCode::TypeMismatch);
  Tensor table = weight(graph, "weight", {config_.vocabularySize, config_.dim}, config_.dtype,
                        config_.initializer, {config_.vocabularySize, config_.dim}, loc);
  return gather(table, ids, 0, loc);
}

} // namespace kiln::nn
