// A small strict JSON reader for file headers (safetensors): objects, arrays,
// strings and integers, each remembering the byte where it starts so that
// errors about a header can point at the offending byte.
#pragma once

#include "support/Error.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::io {

struct JsonMember;

/// One parsed JSON value. Only the kinds file headers need exist: floats,
/// booleans and null are rejected by the parser.
struct JsonValue {
  enum class Kind { Object, Array, String, Integer };
  Kind kind = Kind::Object;
  /// Byte offset of the value's first character in the parsed text.
  size_t offset = 0;
  std::string string;              ///< Kind::String, escapes decoded (UTF-8).
  int64_t integer = 0;             ///< Kind::Integer.
  std::vector<JsonValue> elements; ///< Kind::Array.
  std::vector<JsonMember> members; ///< Kind::Object, in text order, duplicates kept.
};

/// An object member; duplicates are kept so that callers can report them.
struct JsonMember {
  std::string key;
  size_t keyOffset = 0;
  JsonValue value;
};

/// "object", "array", "string" or "integer".
std::string_view jsonKindName(JsonValue::Kind kind);

/// Parses one JSON value followed only by whitespace. Errors are FormatErrors
/// whose message ends with "at byte N" (N counted from the start of `text`).
/// Nesting deeper than `maxDepth` is rejected rather than risking the stack.
Expected<JsonValue> parseJson(std::string_view text, int maxDepth = 16);

} // namespace kiln::io
