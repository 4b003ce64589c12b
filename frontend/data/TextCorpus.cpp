// Reading the licence corpus, splitting it, and cutting next-word examples.
#include "frontend/data/TextCorpus.h"

#include "frontend/data/WordTokenizer.h"
#include "support/RegularFile.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fmt/format.h>
#include <map>

namespace kiln::data {

const std::vector<std::string> &commonLicenseFiles() {
  static const std::vector<std::string> files = {
      "Apache-2.0", "Artistic", "BSD",      "CC0-1.0", "GFDL-1.2", "GFDL-1.3", "GPL-1",
      "GPL-2",      "GPL-3",    "LGPL-2",   "LGPL-2.1", "LGPL-3",  "MPL-1.1",  "MPL-2.0"};
  return files;
}

Expected<TextCorpus> buildTextCorpus(std::span<const std::string> documents,
                                     int64_t vocabularySize, double validationFraction) {
  if (!(validationFraction >= 0.0 && validationFraction < 1.0))
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("text corpus: validation fraction {} is outside [0, 1)",
                                 validationFraction));
  std::vector<std::string> trainWords, validationWords;
  for (const std::string &document : documents) {
    std::vector<std::string> words = tokenizeWords(document);
    auto trainCount = static_cast<size_t>(
        std::floor(static_cast<double>(words.size()) * (1.0 - validationFraction)));
    for (size_t i = 0; i < words.size(); ++i)
      (i < trainCount ? trainWords : validationWords).push_back(std::move(words[i]));
  }
  if (trainWords.empty())
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("text corpus: the {} documents hold no training words",
                                 documents.size()));
  KILN_TRY(Vocabulary vocabulary, Vocabulary::build(trainWords, vocabularySize));
  TextCorpus corpus{std::move(vocabulary), {}, {}};
  corpus.trainTokens = corpus.vocabulary.encode(trainWords);
  corpus.validationTokens = corpus.vocabulary.encode(validationWords);
  return corpus;
}

Expected<TextCorpus> loadTextCorpus(const TextCorpusOptions &options) {
  std::vector<std::string> documents;
  for (const std::string &file : options.files) {
    std::string path = (std::filesystem::path(options.directory) / file).string();
    auto text = readRegularFile(path, "text corpus file", kMaxCorpusFileBytes);
    if (!text)
      return std::unexpected(std::move(text.error())
                                 .withNote(fmt::format("the default corpus is the licence texts "
                                                       "in {}, from Debian's base-files package",
                                                       kCommonLicensesDirectory)));
    documents.push_back(std::move(*text));
  }
  return buildTextCorpus(documents, options.vocabularySize, options.validationFraction);
}

Expected<NamedTensors> nextWordExamples(std::span<const int64_t> tokens, int64_t sequenceLength,
                                        const NextWordNames &names, int64_t stride) {
  if (sequenceLength < 1)
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("next-word examples: sequence length {} must be at least 1",
                                 sequenceLength));
  if (stride < 0)
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("next-word examples: stride {} is negative", stride));
  if (stride == 0)
    stride = sequenceLength;
  auto available = static_cast<int64_t>(tokens.size());
  if (available < sequenceLength + 1)
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("next-word examples: {} tokens make no example of length {} "
                                 "(each needs {} tokens: the inputs and the word after them)",
                                 available, sequenceLength, sequenceLength + 1));
  if (names.inputs.empty() || names.targets.empty() || names.inputs == names.targets)
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("next-word examples: the tensor names \"{}\" and \"{}\" must be "
                                 "distinct and non-empty",
                                 names.inputs, names.targets));
  int64_t count = (available - sequenceLength - 1) / stride + 1;
  HostTensor inputs(DType::I64, {count, sequenceLength});
  HostTensor targets(DType::I64, {count, sequenceLength});
  std::span<int64_t> inputIds = inputs.as<int64_t>(), targetIds = targets.as<int64_t>();
  for (int64_t example = 0; example < count; ++example)
    for (int64_t t = 0; t < sequenceLength; ++t) {
      auto at = static_cast<size_t>(example * sequenceLength + t);
      auto from = static_cast<size_t>(example * stride + t);
      inputIds[at] = tokens[from];
      targetIds[at] = tokens[from + 1];
    }
  NamedTensors examples;
  examples.emplace(names.inputs, std::move(inputs));
  examples.emplace(names.targets, std::move(targets));
  return examples;
}

double uniformLoss(int64_t vocabularySize) { return std::log(static_cast<double>(vocabularySize)); }

double unigramEntropy(std::span<const int64_t> tokens) {
  std::map<int64_t, int64_t> counts;
  for (int64_t token : tokens)
    ++counts[token];
  double total = static_cast<double>(tokens.size()), entropy = 0.0;
  for (const auto &[token, count] : counts) {
    double p = static_cast<double>(count) / total;
    entropy -= p * std::log(p);
  }
  return entropy;
}

} // namespace kiln::data
