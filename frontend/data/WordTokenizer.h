// Splitting text into lowercase words for the word-level language model.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kiln::data {

/// The words of `text`, lowercased. A word is a run of ASCII letters and
/// digits, with an apostrophe kept when letters or digits stand on both sides
/// ("licensee's", "don't"). Everything else separates words and is dropped:
/// punctuation, hyphens, non-ASCII bytes. Dropping punctuation keeps the
/// 1000-word vocabulary for words and keeps the model's loss about words
/// rather than about easily predicted commas.
std::vector<std::string> tokenizeWords(std::string_view text);

} // namespace kiln::data
