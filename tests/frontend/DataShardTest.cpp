// Tests of data-parallel sharding: N ranks' batches together are one process's
// batch, row for row (order, augmentation and normalization included).
#include "frontend/data/DataLoader.h"
#include "frontend/data/DataShard.h"

#include <catch2/catch.hpp>

#include <cstring>

using namespace kiln;
using namespace kiln::data;

namespace {

/// "images": f32 [count, 2, 3, 4] with distinct pixels; "labels": i64 [count], labels[i] = 7 * i.
NamedTensors imageExamples(int64_t count) {
  HostTensor images(DType::F32, {count, 2, 3, 4});
  for (int64_t i = 0; i < images.numElements(); ++i)
    images.setDouble(i, 0.5 + static_cast<double>(i));
  HostTensor labels(DType::I64, {count});
  for (int64_t i = 0; i < count; ++i)
    labels.setDouble(i, 7.0 * static_cast<double>(i));
  NamedTensors examples;
  examples.emplace("images", std::move(images));
  examples.emplace("labels", std::move(labels));
  return examples;
}

DataLoaderOptions shuffledAugmentedOptions(int64_t batchSize, bool dropLast) {
  DataLoaderOptions options;
  options.batchSize = batchSize;
  options.seed = 77;
  options.dropLast = dropLast;
  options.imageName = "images";
  options.augmentation = {0.5, 1};
  options.normalization = {{0.25, 0.5}, {2.0, 0.5}};
  return options;
}

/// The bytes of row `row` of `tensor`.
std::span<const uint8_t> rowBytes(const HostTensor &tensor, int64_t row) {
  size_t size = tensor.byteSize() / static_cast<size_t>(tensor.shape()[0]);
  return tensor.bytes().subspan(static_cast<size_t>(row) * size, size);
}

} // namespace

TEST_CASE("shardRows tiles a batch in rank order, shares differing by at most one row",
          "[data][shard]") {
  // 7 rows over 3 ranks: 2, 2 and 3.
  CHECK(shardRows(7, {0, 3}).begin == 0);
  CHECK(shardRows(7, {0, 3}).end == 2);
  CHECK(shardRows(7, {1, 3}).begin == 2);
  CHECK(shardRows(7, {1, 3}).end == 4);
  CHECK(shardRows(7, {2, 3}).begin == 4);
  CHECK(shardRows(7, {2, 3}).end == 7);
  for (int64_t rows : {0, 1, 2, 5, 7, 64, 100})
    for (int64_t count : {1, 2, 3, 4, 7}) {
      int64_t next = 0, smallest = rows, largest = 0;
      for (int64_t rank = 0; rank < count; ++rank) {
        RowRange range = shardRows(rows, {rank, count});
        CHECK(range.begin == next);
        next = range.end;
        smallest = std::min(smallest, range.size());
        largest = std::max(largest, range.size());
      }
      CHECK(next == rows);
      CHECK(largest - smallest <= 1);
    }
}

TEST_CASE("N ranks' shards together are one process's batches, row for row", "[data][shard]") {
  // 23 examples in global batches of 7 (3 does not divide it): three full
  // batches and, without dropLast, a last partial one of 2 rows.
  NamedTensors examples = imageExamples(23);
  for (bool dropLast : {true, false}) {
    auto whole = DataLoader::create(examples, shuffledAugmentedOptions(7, dropLast));
    REQUIRE(whole.has_value());
    REQUIRE(whole->numBatches() == (dropLast ? 3 : 4));
    for (int64_t count : {1, 2, 3}) {
      CAPTURE(dropLast, count);
      std::vector<DataLoader> ranks;
      for (int64_t rank = 0; rank < count; ++rank) {
        DataLoaderOptions options = shuffledAugmentedOptions(7, dropLast);
        options.shard = {rank, count};
        auto loader = DataLoader::create(examples, options);
        REQUIRE(loader.has_value());
        CHECK(loader->numBatches() == whole->numBatches());
        CHECK(loader->shardBatchSize() == shardRows(7, options.shard).size());
        ranks.push_back(std::move(*loader));
      }
      for (int64_t epoch : {0, 2}) {
        EpochBatches expected = whole->epoch(epoch);
        for (int64_t index = 0; index < expected.size(); ++index) {
          CAPTURE(epoch, index);
          auto batch = expected.batch(index);
          REQUIRE(batch.has_value());
          // Rank after rank, each shard's rows continue where the last one stopped.
          std::map<std::string, int64_t> nextRow;
          for (int64_t rank = 0; rank < count; ++rank) {
            auto shard = ranks[static_cast<size_t>(rank)].epoch(epoch).batch(index);
            REQUIRE(shard.has_value());
            REQUIRE(shard->size() == batch->size());
            for (const auto &[name, tensor] : *shard) {
              const HostTensor &full = batch->at(name);
              int64_t &row = nextRow[name];
              for (int64_t r = 0; r < tensor.shape()[0]; ++r, ++row) {
                REQUIRE(row < full.shape()[0]);
                CHECK(std::ranges::equal(rowBytes(tensor, r), rowBytes(full, row)));
              }
            }
          }
          for (const auto &[name, tensor] : *batch)
            CHECK(nextRow[name] == tensor.shape()[0]);
        }
      }
    }
  }
}

TEST_CASE("A last partial batch smaller than the ranks leaves some ranks no rows",
          "[data][shard]") {
  // 8 examples in batches of 3: the last batch has 2 rows, rank 0 of 3 gets none.
  DataLoaderOptions options = shuffledAugmentedOptions(3, /*dropLast=*/false);
  options.shard = {0, 3};
  auto loader = DataLoader::create(imageExamples(8), options);
  REQUIRE(loader.has_value());
  REQUIRE(loader->numBatches() == 3);
  CHECK(loader->epoch(0).batchExamples(2).empty());
  auto empty = loader->epoch(0).batch(2);
  REQUIRE(empty.has_value());
  CHECK(empty->at("images").shape() == std::vector<int64_t>{0, 2, 3, 4});
  CHECK(empty->at("labels").shape() == std::vector<int64_t>{0});
}

TEST_CASE("Shard errors name the rank, the count and the batch size", "[data][shard]") {
  DataLoaderOptions options = shuffledAugmentedOptions(4, true);
  options.shard = {3, 3};
  auto outside = DataLoader::create(imageExamples(8), options);
  REQUIRE_FALSE(outside.has_value());
  CHECK(outside.error().code() == ErrorCode::InvalidArgument);
  CHECK_THAT(outside.error().message(), Catch::Contains("shard rank 3 of 3 ranks"));
  options.shard = {0, 0};
  auto none = DataLoader::create(imageExamples(8), options);
  REQUIRE_FALSE(none.has_value());
  CHECK_THAT(none.error().message(), Catch::Contains("shard rank 0 of 0 ranks"));
  options.shard = {1, 5};
  auto tooSmall = DataLoader::create(imageExamples(8), options);
  REQUIRE_FALSE(tooSmall.has_value());
  CHECK_THAT(tooSmall.error().message(),
             Catch::Contains("batch size 4 is smaller than the 5 ranks"));
}
