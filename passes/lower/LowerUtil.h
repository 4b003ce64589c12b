// Helpers shared by the CPU lowerings: kernel signatures and names, row-major
// index arithmetic as kernel IR, the compute type of each dtype, and the
// binding of shared subexpressions to Lets around a store.
#pragma once

#include "ir/graph/Graph.h"
#include "ir/kernel/Builder.h"
#include "passes/graph/Fusion.h"
#include "passes/lower/ElementEmitter.h"
#include "passes/lower/Lower.h"

#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace kiln::lower {

/// The global buffers of a group's kernel: "in0".."inN" for group.inputs, "out"
/// for the root's value.
struct KernelSignature {
  BufferMap buffers;
  std::vector<kir::BufferPtr> params; ///< inputs in group.inputs order, then the output
  kir::BufferPtr out;
};

KernelSignature makeSignature(const passes::FusionGroup &group);

/// "k<id>_<kind>_<root op>", e.g. "k3_pointwise_add".
std::string kernelName(const passes::FusionGroup &group);

/// Wraps a body into a LoweredKernel with the signature's parameters and no workspaces.
LoweredKernel finishKernel(const passes::FusionGroup &group, const KernelSignature &signature,
                           kir::StmtPtr body);

/// An Unsupported error naming the node (at its source location), for what no
/// kernel template covers.
Error unsupportedNode(const ir::Node &node, std::string_view why);

/// Whether `value` is computed from parameters and constants alone (a parameter, or a node
/// whose operands all are, through no collective): the launch plan keeps such values between
/// runs on the host (compiler/LaunchPlanBuilder.h, DerivedValues::Kept).
bool dependsOnParametersOnly(const ir::Value *value);

// ---- dtypes

/// f16, bf16 and the f8 formats: storage types whose arithmetic runs in f32.
bool isNarrowFloat(DType dtype);
/// The type a value of `dtype` computes in: f32 for the narrow floats, else itself.
kir::Type computeType(DType dtype);
/// Casts a narrow-float expression to f32; other expressions are returned as is.
kir::ExprPtr toCompute(kir::ExprPtr value);
/// Rounds a compute-type expression to `dtype` (a no-op unless narrow).
kir::ExprPtr fromCompute(kir::ExprPtr value, DType dtype);
/// The type float sums accumulate in: f64 (see docs/lowering.md, "Numerics").
kir::Type sumType(DType dtype);
/// A constant of `dtype` holding `value` rounded to it (roundToDType), typed as
/// the dtype (narrow floats: an f32 immediate cast to the dtype).
kir::ExprPtr dtypeConstant(double value, DType dtype);

// ---- index arithmetic

std::vector<int64_t> stridesOf(const ir::Shape &shape);
/// sum(index[k] * stride[k]) for a row-major tensor of `shape`.
kir::ExprPtr linearIndex(std::span<const kir::ExprPtr> index, const ir::Shape &shape);
/// Splits a row-major flat index over `extents` into one index per axis;
/// size-1 axes get 0 and a single remaining axis takes the flat index itself.
std::vector<kir::ExprPtr> delinearize(kir::ExprPtr flat, const std::vector<int64_t> &extents);
/// min(max(value, low), high) on i64 index expressions.
kir::ExprPtr clampIndex(kir::ExprPtr value, int64_t low, int64_t high);
int64_t product(std::span<const int64_t> extents);
int64_t ceilDiv(int64_t a, int64_t b);

// ---- statements

/// Fresh, deterministic variable names within one kernel ("i0", "t3", ...).
class VarNames {
public:
  kir::VarPtr fresh(const std::string &prefix, kir::Type type = kir::Type::index());
  /// A fresh name for a buffer or variable: prefix + its next number.
  std::string name(const std::string &prefix);

private:
  std::map<std::string, int> next_;
};

/// The values of `roots` with every non-trivial subexpression they reach more
/// than once replaced by a variable, and the Lets that bind those variables
/// (in dependency order), so a DAG built by the element emitter is computed
/// once per element however often it is referenced.
struct SharedValues {
  std::vector<std::pair<kir::VarPtr, kir::ExprPtr>> lets;
  std::vector<kir::ExprPtr> roots;
};
SharedValues hoistShared(std::vector<kir::ExprPtr> roots, VarNames &names);
/// Wraps `body` in the Lets, outermost first.
kir::StmtPtr wrapLets(const std::vector<std::pair<kir::VarPtr, kir::ExprPtr>> &lets,
                      kir::StmtPtr body);

/// One store of a group of stores that share subexpressions.
struct StoreSpec {
  kir::BufferPtr buffer;
  kir::ExprPtr index, value;
};
/// The stores, with their shared subexpressions hoisted into Lets around them.
kir::StmtPtr storesBound(std::vector<StoreSpec> stores, VarNames &names);
kir::StmtPtr storeBound(kir::BufferPtr buffer, kir::ExprPtr index, kir::ExprPtr value,
                        VarNames &names);
/// Binds each of `values` to a fresh variable (hoisting what they share) and
/// builds the body from references to them.
Expected<kir::StmtPtr>
letsBound(const std::string &prefix, std::vector<kir::ExprPtr> values, VarNames &names,
          const std::function<Expected<kir::StmtPtr>(std::vector<kir::ExprPtr>)> &body);

/// A pairwise combination of `parts` with `combine` (for merging partial
/// accumulators), in order: ((p0 p1) (p2 p3)) ...
using State = std::vector<kir::ExprPtr>;
State combineTree(std::vector<State> parts,
                  const std::function<State(const State &, const State &)> &combine);

/// Whether a kernel doing `totalWork` element operations should use parallel loops.
bool runsInParallel(int64_t totalWork, int64_t minParallelWork);

} // namespace kiln::lower
