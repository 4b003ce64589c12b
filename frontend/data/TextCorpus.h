// A word-level text corpus for the LSTM language model: the licence texts that
// every Debian system ships, tokenized to lowercase words, a vocabulary of the
// most frequent ones plus <unk>, a train/validation split, and next-word
// training examples.
#pragma once

#include "frontend/data/Vocabulary.h"
#include "support/Error.h"
#include "support/HostTensor.h"

#include <span>
#include <string>
#include <vector>

namespace kiln::data {

/// Debian's licence texts, from the essential package base-files: present on
/// every Debian system, so the corpus needs no download.
inline constexpr const char *kCommonLicensesDirectory = "/usr/share/common-licenses";
/// The largest corpus file kiln reads (1 GiB of text).
inline constexpr uint64_t kMaxCorpusFileBytes = uint64_t{1} << 30;

/// The files the default corpus reads, in this order: every licence text of
/// Debian 12's base-files. The symbolic links there (GPL -> GPL-3, LGPL,
/// GFDL) are left out: they would count the same text twice.
const std::vector<std::string> &commonLicenseFiles();

struct TextCorpusOptions {
  std::string directory = kCommonLicensesDirectory;
  std::vector<std::string> files = commonLicenseFiles();
  /// Words in the vocabulary, <unk> included (LstmLanguageModel's 1000).
  int64_t vocabularySize = 1000;
  /// The share of each document's words, taken from its end, that goes to
  /// the validation split.
  double validationFraction = 0.1;
};

struct TextCorpus {
  /// Built from the training words only.
  Vocabulary vocabulary;
  /// Word ids of each split: the documents' parts concatenated in order.
  std::vector<int64_t> trainTokens;
  std::vector<int64_t> validationTokens;
};

/// A corpus from document texts. Each document's words are split in order:
/// the first (1 - validationFraction) go to training, the rest to validation,
/// so both splits see every document's vocabulary and style. InvalidArgument
/// for a validation fraction outside [0, 1), a vocabulary size below 1, or no
/// training words.
Expected<TextCorpus> buildTextCorpus(std::span<const std::string> documents,
                                     int64_t vocabularySize, double validationFraction);

/// Reads options.files from options.directory and builds the corpus. IOError
/// naming the file that cannot be read (with a note on base-files), and the
/// errors of buildTextCorpus.
Expected<TextCorpus> loadTextCorpus(const TextCorpusOptions &options = {});

/// What nextWordExamples names its two tensors.
struct NextWordNames {
  std::string inputs = "tokens"; ///< LstmLanguageModel's input
  std::string targets = "targets";
};

/// Next-word training examples from a token stream: example i holds the
/// inputs tokens[iS, iS + L) as i64 [L] and the targets tokens[iS + 1,
/// iS + L + 1), the word after each input, where S is the stride (0, the
/// default: S = L, windows that do not overlap). Together they are i64 [M, L]
/// with M = (tokens - L - 1) / S + 1; the tail that fills no whole example is
/// dropped. This is what a cross-entropy over LstmLanguageModel's per-step
/// predictions [B, L, V] needs. A stride below L makes more (overlapping)
/// examples from a small corpus. InvalidArgument for L < 1, a negative
/// stride, or fewer than L + 1 tokens.
Expected<NamedTensors> nextWordExamples(std::span<const int64_t> tokens, int64_t sequenceLength,
                                        const NextWordNames &names = {}, int64_t stride = 0);

/// log(V) in nats per word: the loss of a model that finds every word equally
/// likely, where an untrained model starts.
double uniformLoss(int64_t vocabularySize);

/// The entropy, in nats per word, of the word frequencies of `tokens`: the
/// best loss of a model that ignores context (predicts the unigram
/// distribution). A trained language model should end well below it.
double unigramEntropy(std::span<const int64_t> tokens);

} // namespace kiln::data
