// support/Json's reader: the strict grammar, where each value and key starts
// (line, column, byte), exact 64-bit integers, and errors that say where.
#include "support/Json.h"

#include <catch2/catch.hpp>

#include <cstdint>
#include <functional>

using namespace kiln;

namespace {

/// The error parsing `text` gives, as "where: message".
std::string errorOf(std::string_view text, int maxDepth = 32) {
  auto parsed = json::parse(text, "t.json", maxDepth);
  REQUIRE_FALSE(parsed);
  CHECK(parsed.error().code() == ErrorCode::FormatError);
  REQUIRE(parsed.error().location());
  return parsed.error().location()->str() + ": " + parsed.error().message();
}

} // namespace

TEST_CASE("json::parse is strict", "[json]") {
  for (const char *bad : {"", "{", "[1,]", "{\"a\":1,}", "01", "1.", ".5", "-", "1e", "tru",
                          "\"tab\there\"", "\"\\x\"", "\"\\ud800\"", "\"\\ude00\"", "\"\\u12",
                          "\"\\", "{} {}", "{'a': 1}", "[1 2]", "nan", "1e999"}) {
    INFO(bad);
    CHECK_FALSE(json::parse(bad, "t"));
  }
  auto deep = json::parse(std::string(100, '[') + std::string(100, ']'), "t");
  REQUIRE(!deep);
  CHECK(deep.error().message().find("nesting") != std::string::npos);

  auto value = json::parse(" {\"s\": \"a\\u00e9\\ud83d\\ude00\\n\", \"n\": -1.5e2, \"i\": 7, "
                           "\"b\": [true, false, null]}",
                           "t");
  REQUIRE(value);
  CHECK(value->member("s")->string == "a\xc3\xa9\xf0\x9f\x98\x80\n");
  CHECK(value->member("n")->number == -150.0);
  CHECK(!value->member("n")->integral);
  CHECK(value->member("i")->integral);
  CHECK(value->member("b")->elements.size() == 3);
  CHECK(value->member("missing") == nullptr);
  CHECK(json::quote("a\"\\\x01") == "\"a\\\"\\\\\\u0001\"");
  auto escapes = json::parse(R"("a\"b\\c\/d\b\f\n\r\t\u0041\u20ac")", "t");
  REQUIRE(escapes);
  CHECK(escapes->string == "a\"b\\c/d\b\f\n\r\tA\xe2\x82\xac");
}

TEST_CASE("values and keys know their line, column and byte offset", "[json]") {
  std::string text = " {\"k\": [1, -20, 0],\n \"s\" :\"x\"}";
  auto parsed = json::parse(text, "t.json");
  REQUIRE(parsed);
  CHECK(parsed->offset == 1);
  REQUIRE(parsed->members.size() == 2);
  const json::Member &k = parsed->members[0];
  CHECK(k.keyOffset == 2);
  CHECK(k.value.offset == 7);
  REQUIRE(k.value.elements.size() == 3);
  CHECK(k.value.elements[1].offset == 11);
  CHECK(k.value.elements[1].integer == -20);
  const json::Member &s = parsed->members[1];
  CHECK(s.keyOffset == 21);
  CHECK(s.value.offset == 26);
  CHECK(s.value.line == 2);
  CHECK(s.value.column == 7);

  // byteOffsetOf agrees with every value's own offset.
  int checked = 0;
  std::function<void(const json::Value &)> visit = [&](const json::Value &value) {
    CHECK(json::byteOffsetOf(text, Location{"", value.line, value.column}) == value.offset);
    ++checked;
    for (const json::Value &element : value.elements)
      visit(element);
    for (const json::Member &member : value.members)
      visit(member.value);
  };
  visit(*parsed);
  CHECK(checked == 6);
}

TEST_CASE("integral numbers are exact across the 64-bit range, and refused beyond it", "[json]") {
  auto integer = [](std::string_view text) {
    auto parsed = json::parse(text, "t.json");
    REQUIRE(parsed);
    REQUIRE(parsed->integral);
    return parsed->integer;
  };
  CHECK(integer("9223372036854775807") == INT64_MAX);
  CHECK(integer("-9223372036854775808") == INT64_MIN);
  CHECK(integer("-0") == 0);
  // 2^53 + 1: a double rounds it to 2^53, a safetensors offset must not.
  CHECK(integer("9007199254740993") == 9007199254740993);
  CHECK(json::parse("9007199254740993", "t.json")->number == 9007199254740992.0);
  CHECK(errorOf("[1,\n 9223372036854775808]") ==
        "t.json:2:2: integer 9223372036854775808 is outside the 64-bit range");
  CHECK(errorOf("-9223372036854775809") ==
        "t.json:1:1: integer -9223372036854775809 is outside the 64-bit range");
  CHECK_THAT(errorOf(std::string(400, '9')), Catch::Contains("outside the 64-bit range"));
  // A fraction or an exponent makes a number a double, whatever its value.
  CHECK_FALSE(json::parse("1e5", "t.json")->integral);
  CHECK_FALSE(json::parse("2.0", "t.json")->integral);
  CHECK(json::parse("1e19", "t.json")->number == 1e19);
}

TEST_CASE("json::parse errors say where, duplicate keys at their repeat", "[json]") {
  // Keys compare decoded: "\u0061" is "a" again. One "a" per object is fine.
  CHECK(errorOf("{\"a\": 1,\n \"b\": {\"a\": 2}, \"\\u0061\": 3}") ==
        "t.json:2:17: duplicate member \"a\"");
  CHECK(errorOf("{\"a\" 1}") == "t.json:1:6: expected ':' after \"a\", found '1'");
  CHECK(errorOf("[0, 012]") == "t.json:1:6: expected ',' or ']' in an array, found '1'");
  CHECK(errorOf("{1:2}") == "t.json:1:2: expected a member name in quotes, found '1'");
  CHECK(errorOf("[1] [2]") == "t.json:1:5: unexpected '[' after the JSON value");
  CHECK(errorOf("") == "t.json:1:1: expected a JSON value, found the end of the text");
  CHECK(errorOf("\"a\tb\"") ==
        "t.json:1:3: a control character inside a string (write it as an escape)");
  CHECK(json::parse("[[[1]]]", "t.json", 3));
  CHECK(errorOf("[[[[1]]]]", 3) == "t.json:1:5: nesting deeper than 3 levels");

  std::string text = "{\n\n  \"a\": tru}";
  CHECK(errorOf(text) == "t.json:3:8: expected a JSON value, found 't'");
  CHECK(json::byteOffsetOf(text, Location{"t.json", 3, 8}) == text.find("tru"));
}
