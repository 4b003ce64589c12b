// The word tokenizer, ASCII only, so it does not depend on the locale.
#include "frontend/data/WordTokenizer.h"

namespace kiln::data {

namespace {

bool isWordCharacter(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

char toLower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

} // namespace

std::vector<std::string> tokenizeWords(std::string_view text) {
  std::vector<std::string> words;
  std::string word;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (isWordCharacter(c)) {
      word.push_back(toLower(c));
    } else if (c == '\'' && !word.empty() && i + 1 < text.size() && isWordCharacter(text[i + 1])) {
      word.push_back(c);
    } else if (!word.empty()) {
      words.push_back(std::move(word));
      word.clear();
    }
  }
  if (!word.empty())
    words.push_back(std::move(word));
  return words;
}

} // namespace kiln::data
