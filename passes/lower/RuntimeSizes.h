// Sizes known only at run time (docs/dynamic-shapes.md): a kernel of a symbolic graph reads the
// value of each size symbol from one more global parameter, `sizes` (i64, one element per
// symbol the graph declares, in declaration order), which the runtime fills before the first
// launch of a run. A symbol's value is loaded once, at the top of the kernel, into a variable
// that loop extents and tails use.
#pragma once

#include "ir/graph/Graph.h"
#include "ir/kernel/KernelIR.h"
#include "passes/graph/Fusion.h"
#include "passes/lower/Lower.h"

#include <map>
#include <string>
#include <vector>

namespace kiln::lower {

/// Whether any value a group reads, computes or writes has a symbolic size.
bool hasSymbolicSizes(const passes::FusionGroup &group);

/// The kernels of a symbolic graph take symbols in the leading axis only: every stride is then
/// static, so element indices stay as they are and only the extents over the leading axis (and
/// the element counts that include it) change at run time. An error names the first value with
/// a symbol in another axis.
Expected<void> requireLeadingSymbols(const passes::FusionGroup &group);

/// An Unsupported error for a group a lowering cannot give runtime sizes yet (`what`: the kernel
/// template), naming the group's anchor or root and the symbols; success for a static group.
Expected<void> requireStaticGroup(const passes::FusionGroup &group, std::string_view what);

class RuntimeSizes {
public:
  explicit RuntimeSizes(const ir::Graph &graph);

  /// `size` as an i64 index expression: a constant for a static size, else computed from the
  /// symbols' variables.
  kir::ExprPtr operator()(const ir::SizeExpr &size);
  /// The extent of `value`'s axis.
  kir::ExprPtr dim(const ir::Value *value, int64_t axis);

  /// A count of `value`'s elements that spans its leading axis (`count` at the upper bounds, a
  /// multiple of that axis' largest extent), at run time: the leading axis' extent times the
  /// rest. A constant when the leading axis is static.
  kir::ExprPtr withLeadingAxis(const ir::Value *value, int64_t count);

  /// Adds the `sizes` parameter (last) to every kernel of `lowered` and binds the symbols it
  /// reads at the top of each body; leaves a kernel that reads no symbol as it is.
  void bind(LoweredKernel &lowered) const;

private:
  const ir::Graph &graph_;
  std::map<std::string, kir::VarPtr, std::less<>> vars_; ///< the symbols read so far
};

} // namespace kiln::lower
