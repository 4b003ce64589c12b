// Tests of the word-level corpus: tokenizing, the vocabulary and its tie
// rule, the train/validation split, next-word examples, and the Debian
// licence corpus served to the LSTM language model.
#include "frontend/data/DataLoader.h"
#include "frontend/data/TextCorpus.h"
#include "frontend/data/WordTokenizer.h"

#include "examples/models/LstmLanguageModel.h"
#include "frontend/DslTestUtil.h"
#include "frontend/TempDir.h"

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>

using namespace kiln;
using namespace kiln::data;
using kiln::testing::TempDir;

namespace {

using Words = std::vector<std::string>;

} // namespace

TEST_CASE("tokenizeWords gives lowercase words and drops punctuation", "[data][text]") {
  CHECK(tokenizeWords("Hello, World! The Licensee's  \"work\" -- don't stop-gap 'quoted' "
                      "v3.14\n(GPL)") ==
        Words{"hello", "world", "the", "licensee's", "work", "don't", "stop", "gap", "quoted",
              "v3", "14", "gpl"});
  // Non-ASCII bytes separate words; a trailing apostrophe is dropped.
  CHECK(tokenizeWords("caf\xc3\xa9 au lait users' ") == Words{"caf", "au", "lait", "users"});
  CHECK(tokenizeWords("").empty());
  CHECK(tokenizeWords(" ,.;' ").empty());
}

TEST_CASE("A vocabulary keeps the most frequent words, ties in byte order", "[data][text]") {
  // Counts: the 3, b 2, c 2, a 2, d 1, "<unk>" 1.
  Words words = {"c", "the", "b", "d", "the", "a", "c", "<unk>", "b", "the", "a"};
  auto vocabulary = Vocabulary::build(words, 4);
  REQUIRE(vocabulary.has_value());
  CHECK(vocabulary->size() == 4);
  CHECK(vocabulary->word(0) == "<unk>");
  CHECK(vocabulary->word(1) == "the");
  CHECK(vocabulary->word(2) == "a");
  CHECK(vocabulary->word(3) == "b");
  CHECK(vocabulary->word(4) == "<unk>");
  CHECK(vocabulary->word(-1) == "<unk>");
  CHECK(vocabulary->id("the") == 1);
  CHECK(vocabulary->id("c") == Vocabulary::kUnknownId);
  CHECK(vocabulary->id("never seen") == Vocabulary::kUnknownId);
  CHECK(vocabulary->id("<unk>") == Vocabulary::kUnknownId);
  // <unk> counts the left-out words: c twice, d once, "<unk>" once.
  CHECK(vocabulary->counts() == std::vector<int64_t>{4, 3, 2, 2});
  CHECK(vocabulary->encode(Words{"b", "c", "the"}) == std::vector<int64_t>{3, 0, 1});

  // The input order does not matter.
  Words reversed(words.rbegin(), words.rend());
  auto again = Vocabulary::build(reversed, 4);
  REQUIRE(again.has_value());
  for (int64_t id = 0; id < 4; ++id)
    CHECK(again->word(id) == vocabulary->word(id));

  // Fewer distinct words than asked for: all of them.
  auto all = Vocabulary::build(words, 100);
  REQUIRE(all.has_value());
  CHECK(all->size() == 6);
  CHECK(all->counts()[0] == 1);

  auto none = Vocabulary::build(words, 0);
  REQUIRE_FALSE(none.has_value());
  CHECK_THAT(none.error().message(), Catch::Contains("vocabulary size 0"));
}

TEST_CASE("buildTextCorpus splits each document and builds the vocabulary from training",
          "[data][text]") {
  // 8 and 4 words; a quarter of each, from its end, goes to validation.
  std::vector<std::string> documents = {"one two three one two one four five",
                                        "one two six seven"};
  auto corpus = buildTextCorpus(documents, 4, 0.25);
  REQUIRE(corpus.has_value());
  // Training: "one two three one two one" + "one two six" (floor(4 * 0.75) = 3
  // words): one 4, two 3, six 1, three 1; six and three tie, six comes first.
  const Vocabulary &vocabulary = corpus->vocabulary;
  CHECK(vocabulary.size() == 4);
  CHECK(vocabulary.word(1) == "one");
  CHECK(vocabulary.word(2) == "two");
  CHECK(vocabulary.word(3) == "six");
  CHECK(corpus->trainTokens == std::vector<int64_t>{1, 2, 0, 1, 2, 1, 1, 2, 3});
  // Validation: "four five" + "seven", none of them in the vocabulary.
  CHECK(corpus->validationTokens == std::vector<int64_t>{0, 0, 0});

  auto bad = buildTextCorpus(documents, 5, 1.0);
  REQUIRE_FALSE(bad.has_value());
  CHECK_THAT(bad.error().message(), Catch::Contains("validation fraction 1"));
  auto empty = buildTextCorpus(std::vector<std::string>{"...", "!"}, 5, 0.1);
  REQUIRE_FALSE(empty.has_value());
  CHECK_THAT(empty.error().message(), Catch::Contains("no training words"));
}

TEST_CASE("nextWordExamples pairs each window with the words after it", "[data][text]") {
  std::vector<int64_t> tokens(45);
  for (size_t i = 0; i < tokens.size(); ++i)
    tokens[i] = static_cast<int64_t>(i * 7 % 13);
  auto examples = nextWordExamples(tokens, 20, {"ids", "next"});
  REQUIRE(examples.has_value());
  const HostTensor &ids = examples->at("ids");
  const HostTensor &next = examples->at("next");
  CHECK(ids.typeStr() == "i64[2,20]");
  CHECK(next.typeStr() == "i64[2,20]");
  for (int64_t row = 0; row < 2; ++row)
    for (int64_t t = 0; t < 20; ++t) {
      CHECK(ids.getDouble(row * 20 + t) == static_cast<double>(tokens[row * 20 + t]));
      CHECK(next.getDouble(row * 20 + t) == static_cast<double>(tokens[row * 20 + t + 1]));
    }
  // 41 tokens still make two examples, 40 only one.
  CHECK(nextWordExamples(std::span(tokens).first(41), 20)->at("tokens").shape()[0] == 2);
  CHECK(nextWordExamples(std::span(tokens).first(40), 20)->at("targets").shape()[0] == 1);
  auto tooShort = nextWordExamples(std::span(tokens).first(20), 20);
  REQUIRE_FALSE(tooShort.has_value());
  CHECK_THAT(tooShort.error().message(), Catch::Contains("20 tokens make no example of length 20"));
  CHECK_FALSE(nextWordExamples(tokens, 0).has_value());
  CHECK_FALSE(nextWordExamples(tokens, 5, {}, -1).has_value());
  // Overlapping windows: stride 3 over 45 tokens makes (45 - 21) / 3 + 1 = 9.
  auto overlapping = nextWordExamples(tokens, 20, {}, 3);
  REQUIRE(overlapping.has_value());
  CHECK(overlapping->at("tokens").typeStr() == "i64[9,20]");
  for (int64_t row = 0; row < 9; ++row)
    for (int64_t t = 0; t < 20; ++t) {
      CHECK(overlapping->at("tokens").getDouble(row * 20 + t) ==
            static_cast<double>(tokens[row * 3 + t]));
      CHECK(overlapping->at("targets").getDouble(row * 20 + t) ==
            static_cast<double>(tokens[row * 3 + t + 1]));
    }
  CHECK_FALSE(nextWordExamples(tokens, 5, {"same", "same"}).has_value());
}

TEST_CASE("Loss references: uniform and unigram", "[data][text]") {
  CHECK(uniformLoss(1000) == Approx(6.907755).epsilon(1e-6));
  CHECK(unigramEntropy(std::vector<int64_t>{0, 0, 1, 1}) == Approx(std::log(2.0)));
  CHECK(unigramEntropy(std::vector<int64_t>{5, 5, 5}) == 0.0);
  // p = (1/2, 1/4, 1/4): 1.5 bits.
  CHECK(unigramEntropy(std::vector<int64_t>{3, 3, 1, 2}) == Approx(1.5 * std::log(2.0)));
}

TEST_CASE("A missing corpus file is named", "[data][text]") {
  TempDir dir;
  {
    std::ofstream(dir.file("A")) << "some words here";
  }
  TextCorpusOptions options;
  options.directory = dir.path().string();
  options.files = {"A", "B"};
  auto corpus = loadTextCorpus(options);
  REQUIRE_FALSE(corpus.has_value());
  CHECK(corpus.error().code() == ErrorCode::NotFound);
  CHECK_THAT(corpus.error().message(), Catch::Contains(dir.file("B")));
  options.files = {"A"};
  auto small = loadTextCorpus(options);
  REQUIRE(small.has_value());
  CHECK(small->trainTokens.size() == 2);
  CHECK(small->validationTokens.size() == 1);
}

TEST_CASE("The licence corpus feeds the LSTM language model", "[data][text]") {
  auto corpus = loadTextCorpus();
  REQUIRE(corpus.has_value());
  const Vocabulary &vocabulary = corpus->vocabulary;
  CHECK(vocabulary.size() == 1000);
  CHECK(vocabulary.word(0) == "<unk>");
  CHECK(vocabulary.word(1) == "the");
  // Debian 12's base-files: 33976 training and 3780 validation words.
  CHECK(corpus->trainTokens.size() > 30000);
  CHECK(corpus->validationTokens.size() > 3000);
  auto inRange = [](int64_t id) { return id >= 0 && id < 1000; };
  CHECK(std::ranges::all_of(corpus->trainTokens, inRange));
  CHECK(std::ranges::all_of(corpus->validationTokens, inRange));
  // Deterministic: a second load gives the same ids.
  auto again = loadTextCorpus();
  REQUIRE(again.has_value());
  CHECK(again->trainTokens == corpus->trainTokens);
  CHECK(again->validationTokens == corpus->validationTokens);

  double entropy = unigramEntropy(corpus->trainTokens);
  CHECK(entropy < uniformLoss(1000) - 1.0);
  CHECK(entropy > 4.0);

  auto examples = nextWordExamples(corpus->trainTokens, 20);
  REQUIRE(examples.has_value());
  DataLoaderOptions options;
  options.batchSize = 2;
  options.seed = 1;
  auto loader = DataLoader::create(std::move(*examples), options);
  REQUIRE(loader.has_value());
  auto batch = loader->epoch(0).batch(0);
  REQUIRE(batch.has_value());
  CHECK(batch->at("tokens").typeStr() == "i64[2,20]");
  CHECK(batch->at("targets").typeStr() == "i64[2,20]");

  // The batch is what the model takes; its predictions line up with the targets.
  Graph graph("lm", 3);
  examples::LstmLanguageModelConfig config{
      .batch = 2, .sequenceLength = 20, .vocabularySize = 1000, .embeddingDim = 4, .units = 3};
  examples::buildLstmLanguageModel(graph, config);
  NamedTensors inputs;
  inputs.emplace("tokens", batch->at("tokens"));
  NamedTensors outputs = kiln::dsltest::run(graph, inputs);
  CHECK(outputs.at("probabilities").typeStr() == "f32[2,20,1000]");
}
