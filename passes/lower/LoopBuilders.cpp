// Loop builders shared by the CPU lowerings: plain loops and nests, task
// loops, and the partial-accumulator reduction loop with its accumulators.
#include "passes/lower/LowerKinds.h"

#include <limits>

namespace kiln::lower {

using namespace kiln::kir;

Expected<StmtPtr> loop(VarNames &names, const std::string &prefix, ExprPtr begin, ExprPtr extent,
                       ForKind kind, const BodyFn &body) {
  if (auto n = constIntValue(extent)) {
    if (*n <= 0)
      return seq({});
    if (*n == 1)
      return body(begin);
  }
  VarPtr var = names.fresh(prefix);
  KILN_TRY(StmtPtr inner, body(kir::ref(var)));
  return forLoop(var, std::move(begin), std::move(extent), kind, std::move(inner));
}

Expected<StmtPtr> loop(VarNames &names, const std::string &prefix, int64_t extent, ForKind kind,
                       const BodyFn &body) {
  return loop(names, prefix, index(0), index(extent), kind, body);
}

namespace {

Expected<StmtPtr> nestFrom(VarNames &names, const std::vector<ExprPtr> &extents, size_t axis,
                           ForKind innermost, std::vector<ExprPtr> &index,
                           const IndexBodyFn &body) {
  if (axis == extents.size())
    return body(index);
  ForKind kind = axis + 1 == extents.size() ? innermost : ForKind::Serial;
  return loop(names, "i", kir::index(0), extents[axis], kind, [&](ExprPtr v) -> Expected<StmtPtr> {
    index[axis] = v;
    return nestFrom(names, extents, axis + 1, innermost, index, body);
  });
}

} // namespace

Expected<StmtPtr> loopNest(VarNames &names, const std::vector<ExprPtr> &extents, ForKind innermost,
                           const IndexBodyFn &body) {
  std::vector<ExprPtr> index(extents.size());
  return nestFrom(names, extents, 0, innermost, index, body);
}

Expected<StmtPtr> loopNest(VarNames &names, const std::vector<int64_t> &extents, ForKind innermost,
                           const IndexBodyFn &body) {
  std::vector<ExprPtr> runtime;
  for (int64_t extent : extents)
    runtime.push_back(kir::index(extent));
  return loopNest(names, runtime, innermost, body);
}

Expected<StmtPtr> taskLoop(VarNames &names, int64_t count, bool parallel, const BodyFn &body) {
  return loop(names, "task", count, parallel && count > 1 ? ForKind::Parallel : ForKind::Serial,
              body);
}

Expected<StmtPtr> taskLoop(VarNames &names, ExprPtr count, bool parallel, const BodyFn &body) {
  if (auto n = constIntValue(count))
    return taskLoop(names, *n, parallel, body);
  return loop(names, "task", index(0), std::move(count),
              parallel ? ForKind::Parallel : ForKind::Serial, body);
}

// ---- the partial-accumulator loop

namespace {

State loadState(const std::vector<BufferPtr> &acc, const ExprPtr &lane) {
  State state;
  for (const BufferPtr &buffer : acc)
    state.push_back(load(buffer, lane));
  return state;
}

} // namespace

Expected<StmtPtr> accumulate(VarNames &names, const std::vector<int64_t> &extents, int lanes,
                             const AccumulatorSpec &spec, const ElementSource &element,
                             const ResultFn &then, const std::vector<ExprPtr> &runtimeExtents) {
  int64_t n = extents.empty() ? 1 : extents.back();
  int64_t width = lanes > 1 && n >= 2 * static_cast<int64_t>(lanes) ? lanes : 1;
  std::vector<ExprPtr> runExtents = runtimeExtents;
  if (runExtents.empty())
    for (int64_t extent : extents)
      runExtents.push_back(kir::index(extent));
  KILN_CHECK(runExtents.size() == extents.size(), "accumulate: one runtime extent per extent");
  ExprPtr runN = extents.empty() ? kir::index(1) : runExtents.back();
  std::vector<BufferPtr> acc;
  for (const Type &type : spec.types)
    acc.push_back(makeBuffer(names.name("acc"), type.dtype, width, MemScope::Register));
  std::vector<StmtPtr> body;

  // Initialize every lane.
  KILN_TRY(StmtPtr init, loop(names, "l", width, ForKind::Unrolled, [&](ExprPtr l) -> Expected<StmtPtr> {
    std::vector<StoreSpec> stores;
    for (size_t j = 0; j < acc.size(); ++j)
      stores.push_back({acc[j], l, spec.init[j]});
    return storesBound(std::move(stores), names);
  }));
  body.push_back(init);

  auto update = [&](ExprPtr lane, std::span<const ExprPtr> index) -> Expected<StmtPtr> {
    KILN_TRY(State value, element(index));
    State next = spec.fold(loadState(acc, lane), value);
    std::vector<StoreSpec> stores;
    for (size_t j = 0; j < acc.size(); ++j)
      stores.push_back({acc[j], lane, next[j]});
    return storesBound(std::move(stores), names);
  };

  std::vector<ExprPtr> outer(runExtents.begin(),
                             runExtents.empty() ? runExtents.end() : runExtents.end() - 1);
  KILN_TRY(StmtPtr loops, loopNest(names, outer, ForKind::Serial,
                                   [&](std::span<const ExprPtr> outerIndex) -> Expected<StmtPtr> {
    std::vector<ExprPtr> index(outerIndex.begin(), outerIndex.end());
    if (extents.empty())
      return update(kir::index(0), index);
    index.push_back(nullptr);
    std::vector<StmtPtr> parts;
    ExprPtr chunks = div(runN, kir::index(width));
    if (width > 1) {
      KILN_TRY(StmtPtr main, loop(names, "c", kir::index(0), chunks, ForKind::Serial,
                                  [&](ExprPtr c) -> Expected<StmtPtr> {
                                    return loop(names, "l", width, ForKind::Vectorized,
                                                [&](ExprPtr l) -> Expected<StmtPtr> {
                                                  index.back() = add(mul(c, kir::index(width)), l);
                                                  return update(l, index);
                                                });
                                  }));
      parts.push_back(main);
    }
    ExprPtr tailBegin = width > 1 ? mul(chunks, kir::index(width)) : kir::index(0);
    KILN_TRY(StmtPtr tail, loop(names, "i", tailBegin, sub(runN, tailBegin), ForKind::Serial,
                                [&](ExprPtr i) -> Expected<StmtPtr> {
                                  index.back() = i;
                                  return update(kir::index(0), index);
                                }));
    parts.push_back(tail);
    return seq(std::move(parts));
  }));
  body.push_back(loops);

  std::vector<State> partials;
  for (int64_t l = 0; l < width; ++l)
    partials.push_back(loadState(acc, kir::index(l)));
  State merged = combineTree(std::move(partials), spec.merge);
  KILN_TRY(StmtPtr rest, letsBound("r", merged, names, then));
  body.push_back(rest);

  StmtPtr result = seq(std::move(body));
  for (size_t j = acc.size(); j-- > 0;)
    result = allocate(acc[j], result);
  return result;
}

// ---- accumulators

ExprPtr extremumInit(Type type, bool findMax) {
  if (isFloatingPoint(type.dtype))
    return floatImm(findMax ? -std::numeric_limits<double>::infinity()
                            : std::numeric_limits<double>::infinity(),
                    type);
  int bits = dtypeByteSize(type.dtype) * 8;
  int64_t highest = bits == 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (bits - 1)) - 1;
  int64_t lowest = -highest - 1;
  return intImm(findMax ? lowest : highest, type);
}

ExprPtr foldExtremum(const ExprPtr &acc, const ExprPtr &value, bool findMax) {
  ExprPtr better = findMax ? gt(value, acc) : lt(value, acc);
  if (isFloatingPoint(value->type().dtype))
    better = logicalOr(better, ne(value, value));
  return select(better, value, acc);
}

AccumulatorSpec sumSpec(Type type) {
  AccumulatorSpec spec;
  spec.types = {type};
  spec.init = {constant(0.0, type)};
  spec.fold = [](const State &s, const State &e) { return State{add(s[0], e[0])}; };
  spec.merge = spec.fold;
  return spec;
}

AccumulatorSpec productSpec(Type type) {
  AccumulatorSpec spec;
  spec.types = {type};
  spec.init = {constant(1.0, type)};
  spec.fold = [](const State &s, const State &e) { return State{mul(s[0], e[0])}; };
  spec.merge = spec.fold;
  return spec;
}

AccumulatorSpec extremumSpec(Type type, bool findMax) {
  AccumulatorSpec spec;
  spec.types = {type};
  spec.init = {extremumInit(type, findMax)};
  spec.fold = [findMax](const State &s, const State &e) {
    return State{foldExtremum(s[0], e[0], findMax)};
  };
  spec.merge = spec.fold;
  return spec;
}

AccumulatorSpec argExtremumSpec(Type type, bool findMax) {
  AccumulatorSpec spec;
  spec.types = {type, Type::index()};
  spec.init = {extremumInit(type, findMax), index(0)};
  bool isFloat = isFloatingPoint(type.dtype);
  // In index order, an element replaces the best one when it is strictly
  // better or NaN, unless the best is NaN already (the first NaN wins).
  spec.fold = [findMax, isFloat](const State &s, const State &e) {
    ExprPtr take = findMax ? gt(e[0], s[0]) : lt(e[0], s[0]);
    if (isFloat)
      take = logicalAnd(logicalOr(take, ne(e[0], e[0])), eq(s[0], s[0]));
    return State{select(take, e[0], s[0]), select(take, e[1], s[1])};
  };
  // Partial results come from interleaved elements, so ties go to the lower index.
  spec.merge = [findMax, isFloat](const State &a, const State &b) {
    ExprPtr better = findMax ? gt(b[0], a[0]) : lt(b[0], a[0]);
    ExprPtr earlier = lt(b[1], a[1]);
    ExprPtr take = logicalOr(better, logicalAnd(eq(b[0], a[0]), earlier));
    if (isFloat) {
      ExprPtr aNan = ne(a[0], a[0]), bNan = ne(b[0], b[0]);
      // NaN beats any number; between two NaNs the earlier one wins.
      take = select(aNan, logicalAnd(bNan, earlier), logicalOr(bNan, take));
    }
    return State{select(take, b[0], a[0]), select(take, b[1], a[1])};
  };
  return spec;
}

} // namespace kiln::lower
