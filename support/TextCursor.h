// A cursor over source text, shared by the graph IR's and the kernel IR's lexers: the
// position, the line and column it has reached, and the whitespace and `//` comments that
// separate tokens; plus how error messages quote the characters and tokens it reads.
#pragma once

#include <fmt/format.h>

#include <string>
#include <string_view>

namespace kiln {

class TextCursor {
protected:
  /// `firstLine` numbers the text's first line, so a chunk of a larger file reports that
  /// file's lines.
  TextCursor(std::string_view text, unsigned firstLine) : text_(text), line_(firstLine) {}

  char peek(size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }

  void advance(size_t count = 1) {
    for (size_t i = 0; i < count && pos_ < text_.size(); ++i, ++pos_) {
      if (text_[pos_] == '\n') {
        ++line_;
        column_ = 1;
      } else {
        ++column_;
      }
    }
  }

  void skipWhitespaceAndComments() {
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
        advance();
      else if (c == '/' && peek(1) == '/')
        while (pos_ < text_.size() && text_[pos_] != '\n')
          advance();
      else
        return;
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
  unsigned line_;
  unsigned column_ = 1;
};

/// A character as an error message shows it: printable ASCII as is, anything else as a hex
/// escape so the message stays one readable line.
inline std::string printableChar(char c) {
  auto byte = static_cast<unsigned char>(c);
  if (byte >= 0x20 && byte < 0x7f)
    return std::string(1, c);
  return fmt::format("\\x{:02x}", byte);
}

/// A token's spelling as an error message quotes it: "'load'", its first 40 characters then
/// "..." when longer.
inline std::string quotedSpelling(std::string_view spelling) {
  constexpr size_t kMaxShown = 40;
  std::string shown;
  for (char c : spelling.substr(0, kMaxShown))
    shown += printableChar(c);
  if (spelling.size() > kMaxShown)
    shown += "...";
  return "'" + shown + "'";
}

} // namespace kiln
