// Building a vocabulary by frequency with a deterministic tie-break.
#include "frontend/data/Vocabulary.h"

#include <algorithm>
#include <fmt/format.h>

namespace kiln::data {

Expected<Vocabulary> Vocabulary::build(std::span<const std::string> words, int64_t size) {
  if (size < 1)
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("vocabulary size {} must be at least 1 (<unk>)", size));
  std::map<std::string, int64_t, std::less<>> frequency;
  int64_t unknown = 0;
  for (const std::string &word : words) {
    if (word == kUnknownWord)
      ++unknown;
    else
      ++frequency[word];
  }
  std::vector<std::pair<std::string, int64_t>> ranked(frequency.begin(), frequency.end());
  // The map is in byte order already; a stable sort by count keeps it for ties.
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto &a, const auto &b) { return a.second > b.second; });

  Vocabulary vocabulary;
  vocabulary.words_.emplace_back(kUnknownWord);
  vocabulary.counts_.push_back(0);
  for (const auto &[word, count] : ranked) {
    if (vocabulary.size() < size) {
      vocabulary.ids_.emplace(word, vocabulary.size());
      vocabulary.words_.push_back(word);
      vocabulary.counts_.push_back(count);
    } else {
      unknown += count;
    }
  }
  vocabulary.counts_[kUnknownId] = unknown;
  return vocabulary;
}

int64_t Vocabulary::id(std::string_view word) const {
  auto found = ids_.find(word);
  return found == ids_.end() ? kUnknownId : found->second;
}

const std::string &Vocabulary::word(int64_t id) const {
  return words_[static_cast<size_t>(id >= 0 && id < size() ? id : kUnknownId)];
}

std::vector<int64_t> Vocabulary::encode(std::span<const std::string> words) const {
  std::vector<int64_t> ids;
  ids.reserve(words.size());
  for (const std::string &word : words)
    ids.push_back(id(word));
  return ids;
}

} // namespace kiln::data
