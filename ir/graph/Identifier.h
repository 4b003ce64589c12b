// Identifiers of the graph IR: the syntax of input, parameter and output names
// and of bare words in the text form. ASCII only, whatever the C locale.
#pragma once

#include <string_view>

namespace kiln::ir {

/// [A-Za-z_]: a character that can start an identifier.
constexpr bool isIdentifierStart(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

/// [A-Za-z0-9_.]: a character that can continue an identifier.
constexpr bool isIdentifierChar(char c) {
  return isIdentifierStart(c) || (c >= '0' && c <= '9') || c == '.';
}

/// Whether `name` matches [A-Za-z_][A-Za-z0-9_.]*. Unlike std::isalpha this
/// ignores the locale, so a name the Graph accepts on one machine is one the
/// printer writes bare and the parser reads back on every machine.
constexpr bool isIdentifier(std::string_view name) {
  if (name.empty() || !isIdentifierStart(name[0]))
    return false;
  for (char c : name)
    if (!isIdentifierChar(c))
      return false;
  return true;
}

} // namespace kiln::ir
