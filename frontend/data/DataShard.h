// DataShard: which rows of every global batch one rank of data-parallel
// training reads, so that N ranks together read exactly what one process would.
#pragma once

#include <cstdint>

namespace kiln::data {

/// Rank `rank` of `count` ranks sharing each batch. The default is one process
/// reading whole batches.
struct DataShard {
  int64_t rank = 0;
  int64_t count = 1;
};

/// A half-open range of rows of a batch.
struct RowRange {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
};

/// The rows of a batch of `rows` rows that `shard` reads: [r*rows/N, (r+1)*rows/N).
/// The ranks' ranges tile the batch in rank order, and their sizes differ by at
/// most one row when N does not divide it (rank 0 gets the smaller shares), so
/// rank r's share of every full batch is the same and a compiled model keeps one
/// batch size. A batch smaller than N leaves some ranks no rows.
RowRange shardRows(int64_t rows, DataShard shard);

} // namespace kiln::data
