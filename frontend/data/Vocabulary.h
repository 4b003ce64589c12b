// Vocabulary: the word <-> id mapping of a language model, the most frequent
// words of a corpus plus <unk> for every other word.
#pragma once

#include "support/Error.h"

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::data {

class Vocabulary {
public:
  /// The id of every word outside the vocabulary.
  static constexpr int64_t kUnknownId = 0;
  static constexpr std::string_view kUnknownWord = "<unk>";

  /// <unk> (id 0) and then the size - 1 most frequent of `words` (ids 1, 2,
  /// ... by falling count; equal counts in byte order of the word, so the
  /// result does not depend on the order of `words` or the platform). Fewer
  /// when `words` has fewer distinct words. The string "<unk>" itself in
  /// `words` counts as unknown. InvalidArgument for a size below 1.
  static Expected<Vocabulary> build(std::span<const std::string> words, int64_t size);

  /// Words including <unk>.
  int64_t size() const { return static_cast<int64_t>(words_.size()); }
  /// The id of `word`, kUnknownId when it is not in the vocabulary.
  int64_t id(std::string_view word) const;
  /// The word of `id`; <unk> for an id outside [0, size()).
  const std::string &word(int64_t id) const;
  /// Every word's id.
  std::vector<int64_t> encode(std::span<const std::string> words) const;
  /// How often each id's words occurred in the corpus build() counted
  /// (<unk>: all the words left out).
  const std::vector<int64_t> &counts() const { return counts_; }

private:
  std::vector<std::string> words_;
  std::vector<int64_t> counts_;
  std::map<std::string, int64_t, std::less<>> ids_;
};

} // namespace kiln::data
