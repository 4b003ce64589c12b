// The recursive-descent parser behind parseJson: strict RFC 8259 syntax for
// the subset it accepts, byte offsets on every value and every error.
#include "frontend/io/JsonReader.h"

#include <fmt/format.h>

namespace kiln::io {

std::string_view jsonKindName(JsonValue::Kind kind) {
  switch (kind) {
  case JsonValue::Kind::Object: return "object";
  case JsonValue::Kind::Array: return "array";
  case JsonValue::Kind::String: return "string";
  case JsonValue::Kind::Integer: return "integer";
  }
  return "value";
}

namespace {

/// A printable description of the byte at a position, for error messages.
std::string describeByte(std::string_view text, size_t pos) {
  if (pos >= text.size())
    return "end of input";
  auto c = static_cast<unsigned char>(text[pos]);
  if (c >= 0x20 && c < 0x7f)
    return fmt::format("'{}'", static_cast<char>(c));
  return fmt::format("byte 0x{:02x}", c);
}

class JsonParser {
public:
  JsonParser(std::string_view text, int maxDepth) : text_(text), maxDepth_(maxDepth) {}

  Expected<JsonValue> parseDocument() {
    skipWhitespace();
    KILN_TRY(JsonValue value, parseValue(0));
    skipWhitespace();
    if (pos_ != text_.size())
      return fail(fmt::format("unexpected {} after the JSON value", describeByte(text_, pos_)));
    return value;
  }

private:
  std::unexpected<Error> fail(const std::string &what) const { return failAt(what, pos_); }
  std::unexpected<Error> failAt(const std::string &what, size_t pos) const {
    return makeError(ErrorCode::FormatError, fmt::format("{} at byte {}", what, pos));
  }

  void skipWhitespace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }

  bool consume(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }

  Expected<JsonValue> parseValue(int depth) {
    if (pos_ >= text_.size())
      return fail("unexpected end of input, expected a value");
    char c = text_[pos_];
    if (c == '{' || c == '[') {
      if (depth >= maxDepth_)
        return fail(fmt::format("JSON nested deeper than {} levels", maxDepth_));
      return c == '{' ? parseObject(depth + 1) : parseArray(depth + 1);
    }
    if (c == '"') {
      JsonValue value;
      value.kind = JsonValue::Kind::String;
      value.offset = pos_;
      KILN_TRY(value.string, parseString());
      return value;
    }
    if (c == '-' || (c >= '0' && c <= '9'))
      return parseInteger();
    return fail(fmt::format("unexpected {}, expected an object, array, string or integer",
                            describeByte(text_, pos_)));
  }

  Expected<JsonValue> parseObject(int depth) {
    JsonValue object;
    object.kind = JsonValue::Kind::Object;
    object.offset = pos_++;
    skipWhitespace();
    if (consume('}'))
      return object;
    while (true) {
      skipWhitespace();
      if (pos_ >= text_.size() || text_[pos_] != '"')
        return fail(fmt::format("unexpected {}, expected a string key", describeByte(text_, pos_)));
      JsonMember member;
      member.keyOffset = pos_;
      KILN_TRY(member.key, parseString());
      skipWhitespace();
      if (!consume(':'))
        return fail(fmt::format("unexpected {}, expected ':' after key \"{}\"",
                                describeByte(text_, pos_), member.key));
      skipWhitespace();
      KILN_TRY(member.value, parseValue(depth));
      object.members.push_back(std::move(member));
      skipWhitespace();
      if (consume('}'))
        return object;
      if (!consume(','))
        return fail(fmt::format("unexpected {}, expected ',' or '}}' in object",
                                describeByte(text_, pos_)));
    }
  }

  Expected<JsonValue> parseArray(int depth) {
    JsonValue array;
    array.kind = JsonValue::Kind::Array;
    array.offset = pos_++;
    skipWhitespace();
    if (consume(']'))
      return array;
    while (true) {
      skipWhitespace();
      KILN_TRY(JsonValue element, parseValue(depth));
      array.elements.push_back(std::move(element));
      skipWhitespace();
      if (consume(']'))
        return array;
      if (!consume(','))
        return fail(
            fmt::format("unexpected {}, expected ',' or ']' in array", describeByte(text_, pos_)));
    }
  }

  Expected<JsonValue> parseInteger() {
    JsonValue value;
    value.kind = JsonValue::Kind::Integer;
    value.offset = pos_;
    bool negative = consume('-');
    size_t digitsStart = pos_;
    // Accumulate the magnitude as unsigned so INT64_MIN is representable.
    uint64_t magnitude = 0;
    const uint64_t limit = negative ? uint64_t{1} << 63 : (uint64_t{1} << 63) - 1;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      uint64_t digit = static_cast<uint64_t>(text_[pos_] - '0');
      if (magnitude > (limit - digit) / 10)
        return failAt("integer out of the 64-bit range", value.offset);
      magnitude = magnitude * 10 + digit;
      ++pos_;
    }
    size_t digitCount = pos_ - digitsStart;
    if (digitCount == 0)
      return fail(fmt::format("unexpected {}, expected a digit", describeByte(text_, pos_)));
    if (digitCount > 1 && text_[digitsStart] == '0')
      return failAt("leading zero in an integer", digitsStart);
    if (pos_ < text_.size() && (text_[pos_] == '.' || text_[pos_] == 'e' || text_[pos_] == 'E'))
      return fail("fractional numbers are not accepted here, expected an integer");
    value.integer =
        negative ? static_cast<int64_t>(~magnitude + 1) : static_cast<int64_t>(magnitude);
    return value;
  }

  /// Parses a string starting at its opening quote; returns it UTF-8 decoded.
  Expected<std::string> parseString() {
    ++pos_; // opening quote
    std::string out;
    while (true) {
      if (pos_ >= text_.size())
        return fail("unterminated string");
      auto c = static_cast<unsigned char>(text_[pos_]);
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (c < 0x20)
        return fail(fmt::format("unescaped control character 0x{:02x} in string", c));
      if (c != '\\') {
        out.push_back(static_cast<char>(c));
        ++pos_;
        continue;
      }
      size_t escapeStart = pos_++;
      if (pos_ >= text_.size())
        return fail("unterminated string");
      char escape = text_[pos_++];
      switch (escape) {
      case '"': out.push_back('"'); break;
      case '\\': out.push_back('\\'); break;
      case '/': out.push_back('/'); break;
      case 'b': out.push_back('\b'); break;
      case 'f': out.push_back('\f'); break;
      case 'n': out.push_back('\n'); break;
      case 'r': out.push_back('\r'); break;
      case 't': out.push_back('\t'); break;
      case 'u': {
        KILN_TRY(uint32_t codePoint, parseUnicodeEscape(escapeStart));
        appendUtf8(out, codePoint);
        break;
      }
      default: return failAt(fmt::format("invalid escape '\\{}' in string", escape), escapeStart);
      }
    }
  }

  Expected<uint32_t> parseHex4() {
    if (text_.size() - pos_ < 4)
      return fail("truncated \\u escape");
    uint32_t value = 0;
    for (int i = 0; i < 4; ++i) {
      char c = text_[pos_];
      uint32_t digit;
      if (c >= '0' && c <= '9')
        digit = static_cast<uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f')
        digit = static_cast<uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        digit = static_cast<uint32_t>(c - 'A' + 10);
      else
        return fail(fmt::format("invalid hex digit {} in \\u escape", describeByte(text_, pos_)));
      value = value * 16 + digit;
      ++pos_;
    }
    return value;
  }

  /// After "\u": one code unit, or a surrogate pair written as two escapes.
  Expected<uint32_t> parseUnicodeEscape(size_t escapeStart) {
    KILN_TRY(uint32_t high, parseHex4());
    if (high >= 0xdc00 && high <= 0xdfff)
      return failAt("unpaired low surrogate in \\u escape", escapeStart);
    if (high < 0xd800 || high > 0xdbff)
      return high;
    if (text_.substr(pos_, 2) != "\\u")
      return failAt("unpaired high surrogate in \\u escape", escapeStart);
    pos_ += 2;
    KILN_TRY(uint32_t low, parseHex4());
    if (low < 0xdc00 || low > 0xdfff)
      return failAt("high surrogate not followed by a low surrogate", escapeStart);
    return 0x10000 + ((high - 0xd800) << 10) + (low - 0xdc00);
  }

  static void appendUtf8(std::string &out, uint32_t codePoint) {
    if (codePoint < 0x80) {
      out.push_back(static_cast<char>(codePoint));
    } else if (codePoint < 0x800) {
      out.push_back(static_cast<char>(0xc0 | (codePoint >> 6)));
      out.push_back(static_cast<char>(0x80 | (codePoint & 0x3f)));
    } else if (codePoint < 0x10000) {
      out.push_back(static_cast<char>(0xe0 | (codePoint >> 12)));
      out.push_back(static_cast<char>(0x80 | ((codePoint >> 6) & 0x3f)));
      out.push_back(static_cast<char>(0x80 | (codePoint & 0x3f)));
    } else {
      out.push_back(static_cast<char>(0xf0 | (codePoint >> 18)));
      out.push_back(static_cast<char>(0x80 | ((codePoint >> 12) & 0x3f)));
      out.push_back(static_cast<char>(0x80 | ((codePoint >> 6) & 0x3f)));
      out.push_back(static_cast<char>(0x80 | (codePoint & 0x3f)));
    }
  }

  std::string_view text_;
  int maxDepth_;
  size_t pos_ = 0;
};

} // namespace

Expected<JsonValue> parseJson(std::string_view text, int maxDepth) {
  return JsonParser(text, maxDepth).parseDocument();
}

} // namespace kiln::io
