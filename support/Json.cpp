// The strict JSON reader: a recursive descent over RFC 8259, tracking lines
// and byte offsets.
#include "support/Json.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <tuple>
#include <unordered_set>

namespace kiln::json {

namespace {

/// The length of the well-formed UTF-8 character `text` starts with, or 0
/// when it starts with none (a stray or missing continuation byte, an
/// overlong form, a surrogate, a value past U+10FFFF).
size_t utf8CharacterLength(std::string_view text) {
  if (text.empty())
    return 0;
  auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  unsigned char lead = byte(0);
  size_t length = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xe ? 3
                                 : (lead >> 3) == 0x1e ? 4 : 0;
  if (length == 0 || length > text.size())
    return 0;
  uint32_t code = length == 1 ? lead : lead & (0x7f >> length);
  for (size_t k = 1; k < length; ++k) {
    if ((byte(k) & 0xc0) != 0x80)
      return 0;
    code = (code << 6) | (byte(k) & 0x3f);
  }
  static constexpr uint32_t kSmallest[] = {0, 0, 0x80, 0x800, 0x10000};
  if (code < kSmallest[length] || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff))
    return 0;
  return length;
}

class Parser {
public:
  Parser(std::string_view text, std::string_view source, int maxDepth)
      : text_(text), source_(source), maxDepth_(maxDepth) {}

  Expected<Value> document() {
    KILN_TRY(Value value, parseValue(0));
    skipSpace();
    if (at_ != text_.size())
      return fail(fmt::format("unexpected {} after the JSON value", describeNext()));
    return value;
  }

private:
  std::unexpected<Error> fail(std::string message) const {
    return makeError(ErrorCode::FormatError, std::move(message),
                     Location{std::string(source_), line_, column()});
  }
  unsigned column() const { return static_cast<unsigned>(at_ - lineStart_) + 1; }
  bool atEnd() const { return at_ >= text_.size(); }
  char peek() const { return atEnd() ? '\0' : text_[at_]; }
  /// Steps over the next character when it is `c`.
  bool take(char c) {
    if (peek() != c)
      return false;
    ++at_;
    return true;
  }

  void skipSpace() {
    while (!atEnd()) {
      char c = text_[at_];
      if (c == '\n') {
        ++at_;
        ++line_;
        lineStart_ = at_;
      } else if (c == ' ' || c == '\t' || c == '\r') {
        ++at_;
      } else {
        break;
      }
    }
  }

  std::string describeNext() const {
    if (atEnd())
      return "the end of the text";
    unsigned char c = static_cast<unsigned char>(peek());
    return c >= 0x20 && c < 0x7f ? fmt::format("'{}'", static_cast<char>(c))
                                 : fmt::format("byte {:#04x}", c);
  }

  Expected<Value> parseValue(int depth) {
    skipSpace();
    if (depth > maxDepth_)
      return fail(fmt::format("nesting deeper than {} levels", maxDepth_));
    Value value;
    value.line = line_;
    value.column = column();
    value.offset = at_;
    char c = peek();
    if (c == '{') {
      value.kind = Value::Kind::Object;
      std::unordered_set<std::string> keys; // Value::member per key would be quadratic
      ++at_;
      skipSpace();
      if (take('}'))
        return value;
      while (true) {
        skipSpace();
        if (peek() != '"')
          return fail(fmt::format("expected a member name in quotes, found {}", describeNext()));
        size_t keyOffset = at_;
        KILN_TRY(std::string key, parseString());
        if (!keys.insert(key).second) {
          at_ = keyOffset; // a key holds no newline: the error points at its quote
          return fail(fmt::format("duplicate member \"{}\"", key));
        }
        skipSpace();
        if (!take(':'))
          return fail(fmt::format("expected ':' after \"{}\", found {}", key, describeNext()));
        KILN_TRY(Value member, parseValue(depth + 1));
        value.members.push_back(Member{std::move(key), keyOffset, std::move(member)});
        skipSpace();
        if (take(','))
          continue;
        if (take('}'))
          return value;
        return fail(fmt::format("expected ',' or '}}' in an object, found {}", describeNext()));
      }
    }
    if (c == '[') {
      value.kind = Value::Kind::Array;
      ++at_;
      skipSpace();
      if (take(']'))
        return value;
      while (true) {
        KILN_TRY(Value element, parseValue(depth + 1));
        value.elements.push_back(std::move(element));
        skipSpace();
        if (take(','))
          continue;
        if (take(']'))
          return value;
        return fail(fmt::format("expected ',' or ']' in an array, found {}", describeNext()));
      }
    }
    if (c == '"') {
      value.kind = Value::Kind::String;
      KILN_TRY(value.string, parseString());
      return value;
    }
    if (c == '-' || (c >= '0' && c <= '9'))
      return parseNumber(std::move(value));
    for (auto [word, kind, flag] : {std::tuple{"true", Value::Kind::Bool, true},
                                    std::tuple{"false", Value::Kind::Bool, false},
                                    std::tuple{"null", Value::Kind::Null, false}}) {
      std::string_view literal(word);
      if (text_.substr(at_, literal.size()) == literal) {
        at_ += literal.size();
        value.kind = kind;
        value.boolean = flag;
        return value;
      }
    }
    return fail(fmt::format("expected a JSON value, found {}", describeNext()));
  }

  Expected<Value> parseNumber(Value value) {
    size_t start = at_;
    auto digits = [&] {
      size_t from = at_;
      while (!atEnd() && peek() >= '0' && peek() <= '9')
        ++at_;
      return at_ - from;
    };
    take('-');
    if (!take('0') && digits() == 0)
      return fail("a number needs digits");
    value.integral = true;
    if (take('.')) {
      value.integral = false;
      if (digits() == 0)
        return fail("a number needs digits after '.'");
    }
    if (take('e') || take('E')) {
      value.integral = false;
      if (!take('+'))
        take('-');
      if (digits() == 0)
        return fail("a number needs digits in its exponent");
    }
    value.kind = Value::Kind::Number;
    const char *first = text_.data() + start, *last = text_.data() + at_;
    auto [end, status] = std::from_chars(first, last, value.number);
    bool fits = status == std::errc() && end == last &&
                (!value.integral || std::from_chars(first, last, value.integer).ec == std::errc());
    if (fits)
      return value;
    std::string_view written = text_.substr(start, at_ - start);
    at_ = start; // a number holds no newline: the error points at its first byte
    return fail(value.integral ? fmt::format("integer {} is outside the 64-bit range", written)
                               : fmt::format("number {} is out of range", written));
  }

  Expected<unsigned> hex4() {
    unsigned code = 0;
    for (int i = 0; i < 4; ++i, ++at_) {
      char c = peek();
      int digit = c >= '0' && c <= '9'   ? c - '0'
                  : c >= 'a' && c <= 'f' ? c - 'a' + 10
                  : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                         : -1;
      if (digit < 0)
        return fail("\\u needs four hex digits");
      code = code * 16 + static_cast<unsigned>(digit);
    }
    return code;
  }

  static void appendUtf8(std::string &out, unsigned code) {
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xc0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3f));
    } else if (code < 0x10000) {
      out += static_cast<char>(0xe0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (code & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (code >> 18));
      out += static_cast<char>(0x80 | ((code >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (code & 0x3f));
    }
  }

  Expected<std::string> parseString() {
    ++at_; // the opening quote
    std::string out;
    while (true) {
      if (atEnd())
        return fail("unterminated string");
      char c = text_[at_];
      if (c == '"') {
        ++at_;
        return out;
      }
      if (static_cast<unsigned char>(c) < 0x20)
        return fail("a control character inside a string (write it as an escape)");
      if (static_cast<unsigned char>(c) >= 0x80) {
        // JSON text is UTF-8 (RFC 8259), and what kiln reads it may write back.
        size_t length = utf8CharacterLength(text_.substr(at_));
        if (length == 0)
          return fail(fmt::format("byte 0x{:02x} inside a string is not part of a UTF-8 character "
                                  "(JSON text is UTF-8)",
                                  static_cast<unsigned char>(c)));
        out += text_.substr(at_, length);
        at_ += length;
        continue;
      }
      if (c != '\\') {
        out += c;
        ++at_;
        continue;
      }
      ++at_;
      char escape = peek();
      ++at_;
      switch (escape) {
      case '"': out += '"'; break;
      case '\\': out += '\\'; break;
      case '/': out += '/'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'u': {
        KILN_TRY(unsigned code, hex4());
        if (code >= 0xd800 && code < 0xdc00) {
          if (text_.substr(at_, 2) != "\\u")
            return fail("a high surrogate \\u escape without its low half");
          at_ += 2;
          KILN_TRY(unsigned low, hex4());
          if (low < 0xdc00 || low >= 0xe000)
            return fail("a high surrogate \\u escape without its low half");
          code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
        } else if (code >= 0xdc00 && code < 0xe000) {
          return fail("a lone low surrogate \\u escape");
        }
        appendUtf8(out, code);
        break;
      }
      default:
        --at_;
        return fail(fmt::format("unknown escape \\{}", describeNext()));
      }
    }
  }

  std::string_view text_;
  std::string_view source_;
  int maxDepth_;
  size_t at_ = 0;
  size_t lineStart_ = 0;
  unsigned line_ = 1;
};

} // namespace

const Value *Value::member(std::string_view key) const {
  for (const Member &candidate : members)
    if (candidate.key == key)
      return &candidate.value;
  return nullptr;
}

std::string_view kindName(Value::Kind kind) {
  switch (kind) {
  case Value::Kind::Null: return "null";
  case Value::Kind::Bool: return "boolean";
  case Value::Kind::Number: return "number";
  case Value::Kind::String: return "string";
  case Value::Kind::Array: return "array";
  case Value::Kind::Object: return "object";
  }
  return "?";
}

Expected<Value> parse(std::string_view text, std::string_view source, int maxDepth) {
  return Parser(text, source, maxDepth).document();
}

size_t byteOffsetOf(std::string_view text, const Location &where) {
  size_t lineStart = 0;
  for (unsigned line = 1; line < where.line; ++line)
    lineStart = text.find('\n', lineStart) + 1;
  return lineStart + where.column - 1;
}

std::optional<size_t> invalidUtf8Offset(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    size_t length = utf8CharacterLength(text.substr(i));
    if (length == 0)
      return i;
    i += length;
  }
  return std::nullopt;
}

std::string quote(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\n': out += "\\n"; break;
    case '\r': out += "\\r"; break;
    case '\t': out += "\\t"; break;
    case '\b': out += "\\b"; break;
    case '\f': out += "\\f"; break;
    default:
      if (static_cast<unsigned char>(c) < 0x20)
        out += fmt::format("\\u{:04x}", static_cast<unsigned char>(c));
      else
        out += c;
    }
  }
  return out + "\"";
}

std::string number(double value) {
  KILN_CHECK(std::isfinite(value), "json::number: JSON has no infinities or NaNs");
  return fmt::format("{}", value);
}

} // namespace kiln::json
