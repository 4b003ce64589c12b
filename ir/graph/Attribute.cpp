// Attribute text form and typed accessors.
#include "ir/graph/Attribute.h"

#include <charconv>
#include <cstdio>
#include <cmath>

namespace kiln::ir {

std::string_view attrKindName(AttrKind kind) {
  switch (kind) {
  case AttrKind::Int: return "int";
  case AttrKind::Float: return "float";
  case AttrKind::Bool: return "bool";
  case AttrKind::String: return "string";
  case AttrKind::Ints: return "ints";
  case AttrKind::Floats: return "floats";
  case AttrKind::Type: return "dtype";
  case AttrKind::Sizes: return "sizes";
  }
  return "?";
}

namespace {

// Shortest text that reads back to the same double, always marked as a float
// (a '.', an exponent, inf or nan) so the parser can tell it from an int.
std::string floatStr(double value) {
  if (std::isnan(value))
    return "nan";
  if (std::isinf(value))
    return value < 0 ? "-inf" : "inf";
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  KILN_CHECK(ec == std::errc(), "to_chars failed on a double");
  std::string text(buffer, end);
  if (text.find_first_of(".e") == std::string::npos)
    text += ".0";
  return text;
}

std::string quoted(const std::string &text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\n': out += "\\n"; break;
    case '\t': out += "\\t"; break;
    default:
      if (static_cast<unsigned char>(c) < 0x20) {
        char hex[8];
        std::snprintf(hex, sizeof(hex), "\\x%02x", static_cast<unsigned char>(c));
        out += hex;
      } else {
        out += c;
      }
    }
  }
  return out + "\"";
}

template <typename T, typename F> std::string listStr(const std::vector<T> &values, F element) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i != 0)
      out += ", ";
    out += element(values[i]);
  }
  return out + "]";
}

} // namespace

std::string attrStr(const Attr &attr) {
  switch (attrKind(attr)) {
  case AttrKind::Int: return std::to_string(std::get<int64_t>(attr));
  case AttrKind::Float: return floatStr(std::get<double>(attr));
  case AttrKind::Bool: return std::get<bool>(attr) ? "true" : "false";
  case AttrKind::String: return quoted(std::get<std::string>(attr));
  case AttrKind::Ints:
    return listStr(std::get<std::vector<int64_t>>(attr),
                   [](int64_t v) { return std::to_string(v); });
  case AttrKind::Floats: return listStr(std::get<std::vector<double>>(attr), floatStr);
  case AttrKind::Type: return std::string(dtypeName(std::get<DType>(attr)));
  case AttrKind::Sizes:
    return listStr(std::get<std::vector<SizeExpr>>(attr),
                   [](const SizeExpr &size) { return size.str(); });
  }
  return "?";
}

namespace {
template <typename T> const T &getAs(const AttrMap &attrs, std::string_view name) {
  auto it = attrs.find(name);
  KILN_CHECK(it != attrs.end(), "attribute '" + std::string(name) + "' missing after verification");
  const T *value = std::get_if<T>(&it->second);
  KILN_CHECK(value != nullptr, "attribute '" + std::string(name) + "' has the wrong kind");
  return *value;
}
} // namespace

int64_t getInt(const AttrMap &attrs, std::string_view name) { return getAs<int64_t>(attrs, name); }
double getFloat(const AttrMap &attrs, std::string_view name) { return getAs<double>(attrs, name); }
bool getBool(const AttrMap &attrs, std::string_view name) { return getAs<bool>(attrs, name); }
const std::string &getString(const AttrMap &attrs, std::string_view name) {
  return getAs<std::string>(attrs, name);
}
const std::vector<int64_t> &getInts(const AttrMap &attrs, std::string_view name) {
  return getAs<std::vector<int64_t>>(attrs, name);
}
const std::vector<double> &getFloats(const AttrMap &attrs, std::string_view name) {
  return getAs<std::vector<double>>(attrs, name);
}
DType getType(const AttrMap &attrs, std::string_view name) { return getAs<DType>(attrs, name); }
const std::vector<SizeExpr> &getSizes(const AttrMap &attrs, std::string_view name) {
  return getAs<std::vector<SizeExpr>>(attrs, name);
}

} // namespace kiln::ir
