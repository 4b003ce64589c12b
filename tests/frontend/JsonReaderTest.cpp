// Tests of the strict header JSON reader: value kinds, offsets, escapes,
// integer limits, and the byte positions in its errors.
#include "frontend/io/JsonReader.h"

#include <catch2/catch.hpp>

using namespace kiln;
using namespace kiln::io;

namespace {
std::string errorOf(std::string_view text) {
  auto parsed = parseJson(text);
  REQUIRE_FALSE(parsed.has_value());
  CHECK(parsed.error().code() == ErrorCode::FormatError);
  return parsed.error().message();
}
} // namespace

TEST_CASE("JSON reader parses objects, arrays, strings and integers with offsets", "[json]") {
  auto parsed = parseJson(" {\"k\": [1, -20, 0], \"s\" :\"x\", \"k\": {}} ");
  REQUIRE(parsed.has_value());
  CHECK(parsed->kind == JsonValue::Kind::Object);
  CHECK(parsed->offset == 1);
  REQUIRE(parsed->members.size() == 3); // duplicates are kept for the caller
  const JsonMember &k = parsed->members[0];
  CHECK(k.key == "k");
  CHECK(k.keyOffset == 2);
  REQUIRE(k.value.kind == JsonValue::Kind::Array);
  CHECK(k.value.offset == 7);
  REQUIRE(k.value.elements.size() == 3);
  CHECK(k.value.elements[1].integer == -20);
  CHECK(k.value.elements[1].offset == 11);
  CHECK(parsed->members[1].value.string == "x");
  CHECK(parsed->members[2].key == "k");
  CHECK(parsed->members[2].value.kind == JsonValue::Kind::Object);
  CHECK(jsonKindName(JsonValue::Kind::Integer) == "integer");
}

TEST_CASE("JSON reader decodes escapes to UTF-8", "[json]") {
  auto parsed = parseJson(R"("a\"b\\c\/d\b\f\n\r\t\u0041\u00e9\u20ac\ud83d\ude00")");
  REQUIRE(parsed.has_value());
  CHECK(parsed->string == "a\"b\\c/d\b\f\n\r\tA\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80");
  CHECK_THAT(errorOf(R"("\ud83d")"),
             Catch::Contains("unpaired high surrogate in \\u escape at byte 1"));
  CHECK_THAT(errorOf(R"("\ude00")"), Catch::Contains("unpaired low surrogate"));
  CHECK_THAT(errorOf(R"("\u12g4")"), Catch::Contains("invalid hex digit 'g'"));
  CHECK_THAT(errorOf("\"a\tb\""),
             Catch::Contains("unescaped control character 0x09 in string at byte 2"));
}

TEST_CASE("JSON reader enforces integer syntax and the 64-bit range", "[json]") {
  CHECK(parseJson("9223372036854775807")->integer == INT64_MAX);
  CHECK(parseJson("-9223372036854775808")->integer == INT64_MIN);
  CHECK_THAT(errorOf("9223372036854775808"), Catch::Contains("out of the 64-bit range at byte 0"));
  CHECK_THAT(errorOf("[0, 012]"), Catch::Contains("leading zero in an integer at byte 4"));
  CHECK_THAT(errorOf("1e5"), Catch::Contains("expected an integer"));
  CHECK_THAT(errorOf("-"), Catch::Contains("expected a digit at byte 1"));
}

TEST_CASE("JSON reader reports structural errors at the right byte", "[json]") {
  CHECK_THAT(errorOf("{\"a\" 1}"), Catch::Contains("expected ':' after key \"a\" at byte 5"));
  CHECK_THAT(errorOf("{\"a\":1 \"b\":2}"),
             Catch::Contains("expected ',' or '}' in object at byte 7"));
  CHECK_THAT(errorOf("[1,]"), Catch::Contains("unexpected ']'") && Catch::Contains("at byte 3"));
  CHECK_THAT(errorOf("{1:2}"), Catch::Contains("expected a string key at byte 1"));
  CHECK_THAT(errorOf("[1] [2]"), Catch::Contains("after the JSON value at byte 4"));
  CHECK_THAT(errorOf(""), Catch::Contains("unexpected end of input"));
  CHECK_THAT(errorOf("null"), Catch::Contains("unexpected 'n'"));
  CHECK(parseJson("[[[]]]", 3).has_value());
  CHECK_THAT(errorOf(std::string(20, '[')), Catch::Contains("nested deeper than 16 levels"));
  auto deep = parseJson("[[[[]]]]", 3);
  REQUIRE_FALSE(deep.has_value());
  CHECK_THAT(deep.error().message(), Catch::Contains("at byte 3"));
}
