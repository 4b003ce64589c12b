// Node attributes: a small closed set of value kinds, stored sorted by name so
// printing and hashing are deterministic, and checked against each op's schema.
#pragma once

#include "ir/graph/SizeExpr.h"
#include "support/DType.h"
#include "support/Error.h"

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace kiln::ir {

/// The kinds an attribute value can have. The index order matches Attr's variant.
/// Sizes: a list of SizeExprs, the symbolic sizes of a reshape or broadcast target.
enum class AttrKind : uint8_t { Int, Float, Bool, String, Ints, Floats, Type, Sizes };

std::string_view attrKindName(AttrKind kind);

/// One attribute value.
using Attr = std::variant<int64_t, double, bool, std::string, std::vector<int64_t>,
                          std::vector<double>, DType, std::vector<SizeExpr>>;

inline AttrKind attrKind(const Attr &attr) { return static_cast<AttrKind>(attr.index()); }

/// Canonical text of an attribute value: 3, 1.5, true, "nchw", [1, 2], [0.5], f32, [N*4, 7].
/// Floats print with the fewest digits that read back to the same double.
std::string attrStr(const Attr &attr);

/// Attributes of a node, ordered by name.
using AttrMap = std::map<std::string, Attr, std::less<>>;

/// One entry of an op's attribute schema.
struct AttrSpec {
  const char *name;
  AttrKind kind;
  /// Default used when the attribute is omitted; required when absent.
  std::optional<Attr> defaultValue;
  const char *doc = "";
  /// An optional attribute with no default: absent unless given (the symbolic
  /// `sizes` of a reshape, present only in a symbolic graph).
  bool mayBeAbsent = false;
};

// Typed access for code that has already verified the node against its schema.
int64_t getInt(const AttrMap &attrs, std::string_view name);
double getFloat(const AttrMap &attrs, std::string_view name);
bool getBool(const AttrMap &attrs, std::string_view name);
const std::string &getString(const AttrMap &attrs, std::string_view name);
const std::vector<int64_t> &getInts(const AttrMap &attrs, std::string_view name);
const std::vector<double> &getFloats(const AttrMap &attrs, std::string_view name);
DType getType(const AttrMap &attrs, std::string_view name);
const std::vector<SizeExpr> &getSizes(const AttrMap &attrs, std::string_view name);

} // namespace kiln::ir
