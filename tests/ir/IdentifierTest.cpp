// isIdentifier, the one definition of the names the Graph accepts and the
// text form writes bare: ASCII only, whatever the C locale says is a letter.
#include "ir/graph/Identifier.h"
#include "ir/graph/Graph.h"

#include <catch2/catch.hpp>

#include <clocale>
#include <string>

using namespace kiln;
using namespace kiln::ir;

namespace {

/// [A-Za-z_][A-Za-z0-9_.]* spelled out per character, independently of the
/// code under test.
bool matchesSpec(const std::string &name) {
  const std::string letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_";
  const std::string rest = letters + "0123456789.";
  if (name.empty() || letters.find(name[0]) == std::string::npos)
    return false;
  return name.find_first_not_of(rest) == std::string::npos;
}

/// Whether a Graph accepts `name` for an input.
bool graphAccepts(const std::string &name) {
  Graph graph;
  return graph.addInput(name, TensorType{DType::F32, {1}}).has_value();
}

/// For every byte, as the first and as a later character: isIdentifier and
/// the Graph agree with the spec.
void checkEveryByte() {
  for (int byte = 0; byte < 256; ++byte) {
    for (const std::string &name : {std::string(1, static_cast<char>(byte)) + "x",
                                    "x" + std::string(1, static_cast<char>(byte))}) {
      INFO("byte " << byte);
      CHECK(isIdentifier(name) == matchesSpec(name));
      CHECK(graphAccepts(name) == matchesSpec(name));
    }
  }
}

} // namespace

TEST_CASE("isIdentifier is [A-Za-z_][A-Za-z0-9_.]*", "[identifier]") {
  static_assert(isIdentifier("conv1.weight") && isIdentifier("_x9") && isIdentifier("a..b"));
  static_assert(!isIdentifier("") && !isIdentifier("9a") && !isIdentifier(".a") &&
                !isIdentifier("a-b") && !isIdentifier("a b"));
  CHECK_FALSE(isIdentifier("caf\xc3\xa9")); // UTF-8 é
  CHECK_FALSE(isIdentifier(std::string("a\0b", 3)));
  checkEveryByte();
}

TEST_CASE("identifiers do not depend on the C locale", "[identifier]") {
  // In a Latin-1 locale std::isalpha(0xe9) ('é') is true; the Graph once used
  // it, so "caf\xe9" was a valid name on one machine and a parse error when
  // printed and read back on another. Try the common Latin-1 locales; at
  // least the "C" check runs everywhere.
  const char *previous = std::setlocale(LC_CTYPE, nullptr);
  std::string saved = previous ? previous : "C";
  int latin1Locales = 0;
  for (const char *name : {"de_DE.ISO-8859-1", "en_US.ISO-8859-1", "fr_FR.ISO-8859-1",
                           "de_DE.iso88591", "en_US.iso88591", "C"}) {
    if (!std::setlocale(LC_CTYPE, name))
      continue;
    latin1Locales += std::string(name) != "C";
    INFO("locale " << name);
    CHECK_FALSE(graphAccepts("caf\xe9"));
    CHECK_FALSE(graphAccepts("\xe9t\xe9"));
    checkEveryByte();
  }
  std::setlocale(LC_CTYPE, saved.c_str());
  if (latin1Locales == 0)
    WARN("no Latin-1 locale installed: identifiers were checked in the \"C\" locale only");
}
