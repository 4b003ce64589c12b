// json::invalidUtf8Offset: well-formed UTF-8 passes; stray continuation
// bytes, truncated sequences, overlong forms, surrogates and code points past
// U+10FFFF are found at their first byte.
#include "support/Json.h"

#include <catch2/catch.hpp>

using kiln::json::invalidUtf8Offset;

TEST_CASE("invalidUtf8Offset finds the first byte that is not UTF-8", "[json]") {
  CHECK_FALSE(invalidUtf8Offset(""));
  CHECK_FALSE(invalidUtf8Offset("plain ascii, \x01 and \x7f"));
  CHECK_FALSE(invalidUtf8Offset("\xc3\xa9t\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\xa5 \xf4\x8f\xbf\xbf"));
  CHECK(invalidUtf8Offset("ab\xff") == 2);
  CHECK(invalidUtf8Offset("a\x80") == 1);          // a continuation byte alone
  CHECK(invalidUtf8Offset("xy\xe2\x82") == 2);     // cut short
  CHECK(invalidUtf8Offset("\xe2\x28\xa1") == 0);   // bad continuation
  CHECK(invalidUtf8Offset("\xc0\xaf") == 0);       // overlong '/'
  CHECK(invalidUtf8Offset("\xe0\x80\xaf") == 0);   // overlong, three bytes
  CHECK(invalidUtf8Offset("ok\xed\xa0\x80") == 2); // a UTF-16 surrogate
  CHECK(invalidUtf8Offset("\xf4\x90\x80\x80") == 0); // past U+10FFFF
  CHECK(invalidUtf8Offset("\xf8\x88\x80\x80\x80") == 0);
}

TEST_CASE("json::parse refuses strings that are not UTF-8, where they are", "[json]") {
  // A tuning import with such a name loaded, and its export was not JSON.
  auto parsed = kiln::json::parse("{\"name\": \"caf\xc3\xa9\", \"bad\": \"x\xe9y\"}", "records.json");
  REQUIRE_FALSE(parsed);
  CHECK(parsed.error().code() == kiln::ErrorCode::FormatError);
  CHECK(parsed.error().message() ==
        "byte 0xe9 inside a string is not part of a UTF-8 character (JSON text is UTF-8)");
  REQUIRE(parsed.error().location());
  CHECK(parsed.error().location()->column == 28);
  auto good = kiln::json::parse("\"caf\xc3\xa9 \xf0\x9f\x94\xa5\"", "ok.json");
  REQUIRE(good);
  CHECK(good->string == "caf\xc3\xa9 \xf0\x9f\x94\xa5");
}
