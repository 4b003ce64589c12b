// kiln's one strict JSON (RFC 8259) reader and the writing helpers for the
// files kiln exchanges (tuning records, safetensors headers): every value
// remembers its line, column and byte offset, so a reader of a file can say
// where a field is wrong. In kiln_rt: a bundle loader needs it without the compiler.
#pragma once

#include "support/Error.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::json {

struct Member;

struct Value {
  enum class Kind { Null, Bool, Number, String, Array, Object };
  Kind kind = Kind::Null;
  unsigned line = 0, column = 0; ///< where the value starts (1-based)
  size_t offset = 0;             ///< the byte of `text` where the value starts
  bool boolean = false;
  double number = 0;
  bool integral = false; ///< a Number written without fraction or exponent
  /// When integral, the number exactly (`number` is exact only up to 2^53, and
  /// a safetensors offset may be larger); the parser refuses integral numbers
  /// outside the int64 range.
  int64_t integer = 0;
  std::string string;    ///< escapes decoded (UTF-8)
  std::vector<Value> elements;
  /// In text order; the parser rejects duplicate keys. (A struct, not a
  /// std::pair: a pair may not hold the still incomplete Value.)
  std::vector<Member> members;

  /// The member named `key`, or null.
  const Value *member(std::string_view key) const;
};

/// One "key": value of an object.
struct Member {
  std::string key;
  size_t keyOffset = 0; ///< the byte of the key's opening quote
  Value value;
};

/// "null", "boolean", "number", "string", "array", "object".
std::string_view kindName(Value::Kind kind);

/// Parses one value followed only by whitespace. Errors are FormatErrors at
/// `source`:line:column (a duplicate key at its second occurrence). Nesting
/// deeper than `maxDepth` is an error, not a stack overflow.
Expected<Value> parse(std::string_view text, std::string_view source, int maxDepth = 32);

/// The byte offset in `text` of `where`, a location parse(text) reported: for
/// callers whose format counts bytes, not lines (a safetensors header).
size_t byteOffsetOf(std::string_view text, const Location &where);

/// The offset of the first byte of `text` that does not belong to a well-formed
/// UTF-8 sequence (overlong forms, surrogates and values past U+10FFFF
/// included), or nullopt when all of it is UTF-8. JSON text must be UTF-8.
std::optional<size_t> invalidUtf8Offset(std::string_view text);

/// `text` as a JSON string literal, quotes included.
std::string quote(std::string_view text);
/// The shortest text that reads back as exactly `value` (finite values only).
std::string number(double value);

} // namespace kiln::json
