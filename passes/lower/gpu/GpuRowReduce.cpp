// reduceAcrossRow: the partial accumulators of a row's threads combined into
// one result every thread of the row sees (shuffles down a warp, shared
// memory across warps, a shuffle broadcast from the row's first lane).
#include "passes/lower/gpu/GpuKinds.h"

#include "ir/kernel/Builder.h"

#include <algorithm>

namespace kiln::lower {

using namespace kiln::kir;

namespace {

bool shufflable(DType dtype) {
  return dtype == DType::F32 || dtype == DType::F64 || dtype == DType::I32 || dtype == DType::I64;
}

/// The state another lane holds; narrow integers and bools travel as i32.
State shuffled(ShuffleMode mode, const State &state, const ExprPtr &lane) {
  State out;
  for (const ExprPtr &value : state) {
    Type type = value->type();
    if (shufflable(type.dtype)) {
      out.push_back(shuffle(mode, value, lane));
      continue;
    }
    ExprPtr wide = shuffle(mode, cast(value, Type::scalar(DType::I32)), lane);
    out.push_back(cast(wide, type));
  }
  return out;
}

ExprPtr laneImm(int64_t lane) { return intImm(lane, Type::scalar(DType::I32)); }

/// Tree reduction over `span` consecutive lanes (a power of two <= 32) with
/// shuffles down: lane l merges lane l + offset, so the first lane of each
/// span ends with the span's result in lane order.
Expected<StmtPtr> withinWarp(GpuLowerContext &cx, const AccumulatorSpec &spec, State state,
                             int64_t span, const ResultFn &then) {
  if (span <= 1)
    return then(std::move(state));
  int64_t offset = span / 2;
  State next = spec.merge(state, shuffled(ShuffleMode::Down, state, laneImm(offset)));
  return letsBound("r", std::move(next), cx.names, [&](State bound) {
    return withinWarp(cx, spec, std::move(bound), offset, then);
  });
}

} // namespace

Expected<StmtPtr> reduceAcrossRow(GpuLowerContext &cx, const GpuThread &thread,
                                  const AccumulatorSpec &spec, State partial,
                                  const ResultFn &then, bool everyThread) {
  int64_t width = thread.threadsX;
  if (width == 1)
    return letsBound("r", std::move(partial), cx.names, then);
  ExprPtr lane = thread.lane();
  if (width <= 32) {
    // The row's threads are an aligned segment of a warp starting at lane - x.
    ExprPtr first = sub(lane, cast(thread.x, Type::scalar(DType::I32)));
    return withinWarp(cx, spec, std::move(partial), width, [&](State reduced) {
      if (!everyThread)
        return then(std::move(reduced));
      return letsBound("r", shuffled(ShuffleMode::Idx, reduced, first), cx.names, then);
    });
  }
  int64_t warps = width / 32;
  KILN_CHECK(warps * 32 == width, "reduceAcrossRow: a row of several warps is whole warps");
  std::vector<BufferPtr> partials;
  for (const ExprPtr &value : partial)
    partials.push_back(sharedBuffer(cx, "red", value->type().dtype, thread.threadsY * warps));
  ExprPtr rowBase = mul(thread.y, kir::index(warps));
  ExprPtr warp = div(thread.x, kir::index(32));
  return withinWarp(cx, spec, std::move(partial), 32, [&](State perWarp) -> Expected<StmtPtr> {
    std::vector<StoreSpec> stores;
    for (size_t j = 0; j < partials.size(); ++j)
      stores.push_back({partials[j], add(rowBase, warp), perWarp[j]});
    StmtPtr publish = ifThen(eq(lane, laneImm(0)), storesBound(std::move(stores), cx.names));
    // Every warp of the row reads all warps' partials and reduces them again,
    // so the result reaches each warp without a second barrier.
    ExprPtr wideLane = cast(lane, Type::index());
    ExprPtr slot = add(rowBase, min(wideLane, kir::index(warps - 1)));
    State gathered;
    for (size_t j = 0; j < partials.size(); ++j)
      gathered.push_back(select(lt(wideLane, kir::index(warps)), load(partials[j], slot), spec.init[j]));
    KILN_TRY(StmtPtr combine,
             letsBound("r", std::move(gathered), cx.names, [&](State bound) {
               return withinWarp(cx, spec, std::move(bound), warps, [&](State total) {
                 if (!everyThread)
                   return then(std::move(total));
                 return letsBound("r", shuffled(ShuffleMode::Idx, total, laneImm(0)), cx.names, then);
               });
             }));
    return seq({publish, barrier(), combine});
  });
}

} // namespace kiln::lower
