// Splitting a batch's rows among the ranks of data-parallel training.
#include "frontend/data/DataShard.h"

#include "support/Error.h"

namespace kiln::data {

RowRange shardRows(int64_t rows, DataShard shard) {
  KILN_CHECK(shard.count >= 1 && shard.rank >= 0 && shard.rank < shard.count && rows >= 0,
             "DataLoader::create checks the shard; callers pass a checked one");
  return {shard.rank * rows / shard.count, (shard.rank + 1) * rows / shard.count};
}

} // namespace kiln::data
