// An independent strict JSON (RFC 8259) parser, the oracle for tests of JSON
// kiln writes (Chrome traces, tuning exports): those writers escape with
// support/Json's quote and tuning exports are read back by support/Json, so
// checking them with support/Json alone would pass a mistake writer and reader
// share. Returns nullopt on any malformed input.
#pragma once

#include <cctype>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln::test {

struct Json {
  enum class Kind { Null, Bool, Number, String, Array, Object };
  Kind kind = Kind::Null;
  bool boolean = false;
  double number = 0;
  std::string string; ///< escapes decoded (\u escapes below 0x80 only)
  std::vector<Json> elements;
  std::map<std::string, Json> members;

  const Json &operator[](const std::string &key) const { return members.at(key); }
  bool has(const std::string &key) const { return members.contains(key); }
};

class StrictJsonParser {
public:
  static std::optional<Json> parse(std::string_view text) {
    StrictJsonParser parser(text);
    std::optional<Json> value = parser.value(0);
    parser.skipSpace();
    if (!value || parser.at_ != text.size())
      return std::nullopt;
    return value;
  }

private:
  explicit StrictJsonParser(std::string_view text) : text_(text) {}

  void skipSpace() {
    while (at_ < text_.size() &&
           (text_[at_] == ' ' || text_[at_] == '\n' || text_[at_] == '\r' || text_[at_] == '\t'))
      ++at_;
  }
  bool consume(std::string_view word) {
    if (text_.substr(at_, word.size()) != word)
      return false;
    at_ += word.size();
    return true;
  }

  std::optional<Json> value(int depth) {
    if (depth > 64)
      return std::nullopt;
    skipSpace();
    if (at_ >= text_.size())
      return std::nullopt;
    Json json;
    char c = text_[at_];
    if (c == '{')
      return object(depth);
    if (c == '[')
      return array(depth);
    if (c == '"') {
      json.kind = Json::Kind::String;
      if (!string(json.string))
        return std::nullopt;
      return json;
    }
    if (bool isTrue = consume("true"); isTrue || consume("false")) {
      json.kind = Json::Kind::Bool;
      json.boolean = isTrue;
      return json;
    }
    if (consume("null"))
      return json;
    return number();
  }

  std::optional<Json> object(int depth) {
    Json json;
    json.kind = Json::Kind::Object;
    ++at_;
    skipSpace();
    if (consume("}"))
      return json;
    while (true) {
      skipSpace();
      std::string key;
      if (at_ >= text_.size() || text_[at_] != '"' || !string(key))
        return std::nullopt;
      skipSpace();
      if (!consume(":"))
        return std::nullopt;
      std::optional<Json> member = value(depth + 1);
      if (!member || json.members.contains(key))
        return std::nullopt;
      json.members.emplace(key, std::move(*member));
      skipSpace();
      if (consume("}"))
        return json;
      if (!consume(","))
        return std::nullopt;
    }
  }

  std::optional<Json> array(int depth) {
    Json json;
    json.kind = Json::Kind::Array;
    ++at_;
    skipSpace();
    if (consume("]"))
      return json;
    while (true) {
      std::optional<Json> element = value(depth + 1);
      if (!element)
        return std::nullopt;
      json.elements.push_back(std::move(*element));
      skipSpace();
      if (consume("]"))
        return json;
      if (!consume(","))
        return std::nullopt;
    }
  }

  bool string(std::string &out) {
    ++at_; // the opening quote
    while (at_ < text_.size()) {
      unsigned char c = static_cast<unsigned char>(text_[at_++]);
      if (c == '"')
        return true;
      if (c < 0x20)
        return false; // control characters must be escaped
      if (c != '\\') {
        out += static_cast<char>(c);
        continue;
      }
      if (at_ >= text_.size())
        return false;
      char escape = text_[at_++];
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
        if (at_ + 4 > text_.size())
          return false;
        unsigned code = 0;
        for (int i = 0; i < 4; ++i) {
          char h = text_[at_++];
          if (!std::isxdigit(static_cast<unsigned char>(h)))
            return false;
          code = code * 16 + static_cast<unsigned>(std::isdigit(static_cast<unsigned char>(h))
                                                       ? h - '0'
                                                       : std::tolower(h) - 'a' + 10);
        }
        if (code >= 0x80)
          return false; // not needed by these tests
        out += static_cast<char>(code);
        break;
      }
      default: return false;
      }
    }
    return false;
  }

  std::optional<Json> number() {
    size_t start = at_;
    consume("-");
    if (consume("0")) {
    } else if (at_ < text_.size() && text_[at_] >= '1' && text_[at_] <= '9') {
      digits();
    } else {
      return std::nullopt;
    }
    if (consume(".") && !digits())
      return std::nullopt;
    if (at_ < text_.size() && (text_[at_] == 'e' || text_[at_] == 'E')) {
      ++at_;
      if (!consume("+"))
        consume("-");
      if (!digits())
        return std::nullopt;
    }
    Json json;
    json.kind = Json::Kind::Number;
    json.number = std::strtod(std::string(text_.substr(start, at_ - start)).c_str(), nullptr);
    return json;
  }

  bool digits() {
    size_t start = at_;
    while (at_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[at_])))
      ++at_;
    return at_ > start;
  }

  std::string_view text_;
  size_t at_ = 0;
};

} // namespace kiln::test
