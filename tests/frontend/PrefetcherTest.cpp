// Tests of the Prefetcher: the same batches in the same order as direct
// calls, a bounded queue, errors and exceptions handed over in order, and
// shutdown with work pending.
#include "frontend/data/Prefetcher.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <ranges>
#include <stdexcept>
#include <thread>

using namespace kiln;
using namespace kiln::data;

namespace {

/// An item whose only tensor "index" holds its index.
NamedTensors indexItem(int64_t index) {
  NamedTensors item;
  item.emplace("index", HostTensor::fromDoubles(DType::I64, {1},
                                                std::vector<double>{static_cast<double>(index)}));
  return item;
}

/// Waits up to two seconds for `condition`.
template <typename Condition> bool eventually(Condition condition) {
  for (int i = 0; i < 2000 && !condition(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return condition();
}

} // namespace

TEST_CASE("A prefetched epoch equals the directly computed one", "[data][prefetch]") {
  Rng rng(4);
  NamedTensors examples;
  examples.emplace("images", HostTensor::randomUniform(DType::F32, {29, 1, 6, 6}, rng, 0, 1));
  examples.emplace("labels", HostTensor(DType::I64, {29}));
  DataLoaderOptions options;
  options.batchSize = 4;
  options.dropLast = false;
  options.seed = 5;
  options.imageName = "images";
  options.augmentation = {0.5, 1};
  options.normalization = {{0.3}, {0.4}};
  auto loader = DataLoader::create(examples, options);
  REQUIRE(loader.has_value());
  for (int64_t e : {0, 1}) {
    EpochBatches epoch = loader->epoch(e);
    auto prefetcher = Prefetcher::start(epoch);
    REQUIRE(prefetcher.has_value());
    for (int64_t b = 0; b < epoch.size(); ++b) {
      auto prefetched = (*prefetcher)->next();
      REQUIRE(prefetched.has_value());
      REQUIRE(prefetched->has_value());
      auto direct = epoch.batch(b);
      REQUIRE(direct.has_value());
      for (const auto &[name, tensor] : *direct) {
        const HostTensor &other = (*prefetched)->at(name);
        CHECK(other.shape() == tensor.shape());
        CHECK(std::ranges::equal(other.bytes(), tensor.bytes()));
      }
    }
    auto end = (*prefetcher)->next();
    REQUIRE(end.has_value());
    CHECK_FALSE(end->has_value());
    CHECK((*prefetcher)->taken() == 8);
  }
}

TEST_CASE("The prefetch queue holds at most its depth", "[data][prefetch]") {
  std::atomic<int64_t> produced = 0;
  auto prefetcher = Prefetcher::start(
      10,
      [&](int64_t index) {
        ++produced;
        return Expected<NamedTensors>(indexItem(index));
      },
      2);
  REQUIRE(prefetcher.has_value());
  CHECK(eventually([&] { return produced == 2; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  CHECK(produced == 2);
  auto first = (*prefetcher)->next();
  REQUIRE((first.has_value() && first->has_value()));
  CHECK((*first)->at("index").getDouble(0) == 0);
  CHECK(eventually([&] { return produced == 3; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  CHECK(produced == 3);
  for (int64_t i = 1; i < 10; ++i) {
    auto item = (*prefetcher)->next();
    REQUIRE((item.has_value() && item->has_value()));
    CHECK((*item)->at("index").getDouble(0) == static_cast<double>(i));
  }
  auto end = (*prefetcher)->next();
  REQUIRE(end.has_value());
  CHECK_FALSE(end->has_value());
}

TEST_CASE("A producer's error or exception reaches the consumer in order", "[data][prefetch]") {
  auto failing = [](bool throws) {
    return [throws](int64_t index) -> Expected<NamedTensors> {
      if (index == 3) {
        if (throws)
          throw std::runtime_error("disk on fire");
        return makeError(ErrorCode::IOError, "cannot read shard 3");
      }
      return indexItem(index);
    };
  };
  for (bool throws : {false, true}) {
    auto prefetcher = Prefetcher::start(6, failing(throws));
    REQUIRE(prefetcher.has_value());
    for (int64_t i = 0; i < 3; ++i) {
      auto item = (*prefetcher)->next();
      REQUIRE((item.has_value() && item->has_value()));
      CHECK((*item)->at("index").getDouble(0) == static_cast<double>(i));
    }
    for (int repeat = 0; repeat < 2; ++repeat) {
      auto failure = (*prefetcher)->next();
      REQUIRE_FALSE(failure.has_value());
      if (throws)
        CHECK_THAT(failure.error().message(),
                   Catch::Contains("producing item 3 threw: disk on fire"));
      else
        CHECK(failure.error().message() == "cannot read shard 3");
      REQUIRE(failure.error().notes().size() == 1);
      CHECK(failure.error().notes()[0] == "while prefetching item 3 of 6");
    }
  }
}

TEST_CASE("A prefetcher shuts down cleanly with work pending", "[data][prefetch]") {
  std::atomic<int64_t> produced = 0;
  auto slow = [&](int64_t index) -> Expected<NamedTensors> {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    ++produced;
    return indexItem(index);
  };
  {
    auto untouched = Prefetcher::start(1000, slow);
    REQUIRE(untouched.has_value());
  }
  {
    auto partlyRead = Prefetcher::start(1000, slow);
    REQUIRE(partlyRead.has_value());
    auto item = (*partlyRead)->next();
    REQUIRE((item.has_value() && item->has_value()));
  }
  // Each destructor stopped its thread after at most depth + 1 more items.
  CHECK(produced <= 1 + 2 + 1 + 2 + 1);

  auto empty = Prefetcher::start(0, slow);
  REQUIRE(empty.has_value());
  auto end = (*empty)->next();
  REQUIRE(end.has_value());
  CHECK_FALSE(end->has_value());
}

TEST_CASE("Prefetcher arguments are checked", "[data][prefetch]") {
  auto produce = [](int64_t index) -> Expected<NamedTensors> { return indexItem(index); };
  auto shallow = Prefetcher::start(3, produce, 0);
  REQUIRE_FALSE(shallow.has_value());
  CHECK_THAT(shallow.error().message(), Catch::Contains("queue depth 0"));
  auto negative = Prefetcher::start(-1, produce);
  REQUIRE_FALSE(negative.has_value());
  CHECK_THAT(negative.error().message(), Catch::Contains("item count -1"));
  auto none = Prefetcher::start(3, Prefetcher::Producer{});
  REQUIRE_FALSE(none.has_value());
  CHECK_THAT(none.error().message(), Catch::Contains("no producer"));
}
