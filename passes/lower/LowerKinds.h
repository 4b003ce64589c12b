// The per-kind CPU lowerings behind the CPU lowering table, the state they share
// while building one kernel, and the loop builders they have in common.
#pragma once

#include "passes/lower/ElementEmitter.h"
#include "passes/lower/KernelContext.h"
#include "passes/lower/Lower.h"
#include "passes/lower/LowerUtil.h"

#include <functional>

namespace kiln::lower {

/// Everything one CPU kernel's lowering reads and builds with: KernelContext and the target.
struct LowerContext : KernelContext {
  LowerContext(const ir::Graph &graph, const passes::FusionGroup &group,
               const codegen::CpuTarget &target)
      : KernelContext(graph, group), target(target) {}

  const codegen::CpuTarget &target;
};

/// The body of the kernel of each kind.
Expected<kir::StmtPtr> lowerPointwise(LowerContext &cx, const PointwiseSchedule &schedule);
Expected<kir::StmtPtr> lowerTranspose(LowerContext &cx, const TransposeSchedule &schedule);
Expected<kir::StmtPtr> lowerReduction(LowerContext &cx, const ReductionSchedule &schedule);
Expected<kir::StmtPtr> lowerRowNorm(LowerContext &cx, const RowNormSchedule &schedule);
Expected<kir::StmtPtr> lowerPooling(LowerContext &cx, const PoolingSchedule &schedule);

/// Whether every element of a pointwise group reads its operands at the
/// output's own flat index (or at a single element), so one flat loop
/// computes it: only same-shape elementwise ops and scalars.
bool isFlatPointwise(const passes::FusionGroup &group);

/// The output index of flat element `flat` of a flat pointwise group (of
/// `shape`, rank >= 1): the flat index on the last axis of extent > 1, zeros elsewhere.
std::vector<kir::ExprPtr> flatIndex(const ir::Shape &shape, kir::ExprPtr flat);

/// A transpose in a pointwise group whose innermost output axis is strided in its operand.
struct TransposedRead {
  const ir::Node *node;
  int64_t axis; ///< the output axis that is contiguous in the operand
  /// Every node that depends on the transpose is elementwise of the root's
  /// shape, so the transpose is only ever read at the output's own index and
  /// a tile of it can be staged in a local buffer.
  bool stageable;
};
std::optional<TransposedRead> findTransposedRead(const passes::FusionGroup &group);

/// For a pointwise group whose innermost output axis reads a transposed
/// operand with a stride: the output axis that is contiguous in that operand
/// (the other tile axis); nullopt when the group is not transpose-like.
std::optional<int64_t> transposedAxis(const passes::FusionGroup &group);

/// What a reduction anchor computes, decoded from its op and attributes
/// (shared by the CPU and GPU reduction lowerings).
struct ReductionPlan {
  const ir::Node *anchor;
  const ir::Value *input;
  std::vector<bool> reduced; ///< per input axis
  bool keepDims;
  ir::OpKind kind;
  DType inputType;
  int64_t count; ///< elements reduced into each output element
};
ReductionPlan planReduction(const ir::Node &anchor);

// ---- loop builders

using BodyFn = std::function<Expected<kir::StmtPtr>(kir::ExprPtr)>;
using IndexBodyFn = std::function<Expected<kir::StmtPtr>(std::span<const kir::ExprPtr>)>;

/// for v in [begin, begin + extent) of `kind`; no loop at all for a constant
/// extent of 1, and nothing for a constant extent of 0.
Expected<kir::StmtPtr> loop(VarNames &names, const std::string &prefix, kir::ExprPtr begin,
                            kir::ExprPtr extent, kir::ForKind kind, const BodyFn &body);
Expected<kir::StmtPtr> loop(VarNames &names, const std::string &prefix, int64_t extent,
                            kir::ForKind kind, const BodyFn &body);

/// Nested loops over `extents` (the last of kind `innermost`, the others
/// serial); the body gets one index per axis.
Expected<kir::StmtPtr> loopNest(VarNames &names, const std::vector<int64_t> &extents,
                                kir::ForKind innermost, const IndexBodyFn &body);
/// The same over extents known at run time (constants where static).
Expected<kir::StmtPtr> loopNest(VarNames &names, const std::vector<kir::ExprPtr> &extents,
                                kir::ForKind innermost, const IndexBodyFn &body);

/// One loop over `count` tasks, Parallel when `parallel` and there are at
/// least two; the body gets the task index.
Expected<kir::StmtPtr> taskLoop(VarNames &names, int64_t count, bool parallel, const BodyFn &body);
/// The same over a count known at run time.
Expected<kir::StmtPtr> taskLoop(VarNames &names, kir::ExprPtr count, bool parallel,
                                const BodyFn &body);

/// A reduction's state: one or more accumulators updated together (argmax
/// keeps a value and its index).
struct AccumulatorSpec {
  std::vector<kir::Type> types;
  State init;
  /// Folds one element into a state; within one partial accumulator elements
  /// arrive in increasing index order.
  std::function<State(const State &state, const State &element)> fold;
  /// Merges two partial states (lane order: `a` holds the lower lane).
  std::function<State(const State &a, const State &b)> merge;
};

using ElementSource = std::function<Expected<State>(std::span<const kir::ExprPtr>)>;
using ResultFn = std::function<Expected<kir::StmtPtr>(State)>;

/// Accumulates `element` over the index space `extents` (nested serial loops;
/// the innermost axis split over `lanes` partial accumulators in a Register
/// buffer, updated by a Vectorized loop, plus a serial tail), merges the
/// lanes pairwise and continues with `then` on the result bound to Lets. `runtimeExtents`, when
/// given (one per extent), are the extents the loops run over at run time, at most `extents`,
/// which decide the lanes.
Expected<kir::StmtPtr> accumulate(VarNames &names, const std::vector<int64_t> &extents, int lanes,
                                  const AccumulatorSpec &spec, const ElementSource &element,
                                  const ResultFn &then,
                                  const std::vector<kir::ExprPtr> &runtimeExtents = {});

// ---- common accumulators (elements in the accumulator's type)

AccumulatorSpec sumSpec(kir::Type type);
AccumulatorSpec productSpec(kir::Type type);
/// max or min with NaN propagation; `type` is a compute type.
AccumulatorSpec extremumSpec(kir::Type type, bool findMax);
/// (value, i64 index) of the first maximum or minimum, NaN counting as the extreme.
AccumulatorSpec argExtremumSpec(kir::Type type, bool findMax);

/// max/min with the reference's NaN rule: `acc` stays NaN once NaN, and a
/// NaN element wins.
kir::ExprPtr foldExtremum(const kir::ExprPtr &acc, const kir::ExprPtr &value, bool findMax);
/// The lowest (or highest) value of a compute type: -inf / +inf for floats.
kir::ExprPtr extremumInit(kir::Type type, bool findMax);

/// The accumulator of a reduction plan (f64 sums for floats, NaN-propagating extrema, ...).
AccumulatorSpec reductionSpec(const ReductionPlan &plan);
/// An input element as the accumulator's element (arg reductions add the
/// element's index along the reduced axis).
State reductionElement(const ReductionPlan &plan, const AccumulatorSpec &spec,
                       const kir::ExprPtr &value, const kir::ExprPtr &axisIndex);
/// The anchor's result (its dtype) from the final state.
/// `count`: the run's count of reduced elements (reduce_mean's divisor) when it is known only
/// at run time; nullptr for plan.count.
kir::ExprPtr reductionResult(const ReductionPlan &plan, const State &state,
                             const kir::ExprPtr &count = nullptr);

} // namespace kiln::lower
