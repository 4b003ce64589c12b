// The launch nest of GPU kernels (block loop, shared allocations, thread
// loops), per-thread register accumulators and the row split of row-parallel
// schedules.
#include "passes/lower/gpu/GpuKinds.h"

#include "ir/kernel/Builder.h"

#include <fmt/format.h>

namespace kiln::lower {

using namespace kiln::kir;

ExprPtr GpuThread::linear() const {
  if (threadsY == 1)
    return x;
  return add(x, mul(y, kir::index(threadsX)));
}

ExprPtr GpuThread::lane() const {
  // A block of 32 or fewer threads per warp row never needs the modulo.
  ExprPtr flat = threadsX * threadsY <= 32 ? linear() : mod(linear(), kir::index(32));
  return cast(flat, Type::scalar(DType::I32));
}

Expected<StmtPtr> gpuNest(GpuLowerContext &cx, int64_t blocks, int64_t threadsX, int64_t threadsY,
                          const ThreadBodyFn &body) {
  KILN_CHECK(blocks >= 1 && threadsX >= 1 && threadsY >= 1, "gpuNest: empty launch");
  VarPtr blockVar = cx.names.fresh("bx");
  VarPtr tx = cx.names.fresh("tx");
  VarPtr ty = threadsY > 1 ? cx.names.fresh("ty") : nullptr;
  GpuThread thread{kir::ref(blockVar), kir::ref(tx), ty ? kir::ref(ty) : kir::index(0), threadsX, threadsY};
  size_t firstShared = cx.shared.size();
  KILN_TRY(StmtPtr inner, body(thread));
  StmtPtr nest = forRange(tx, threadsX, ForKind::ThreadX, inner);
  if (ty)
    nest = forRange(ty, threadsY, ForKind::ThreadY, nest);
  for (size_t i = cx.shared.size(); i-- > firstShared;)
    nest = allocate(cx.shared[i], nest);
  cx.shared.resize(firstShared);
  return forRange(blockVar, blocks, ForKind::BlockX, nest);
}

BufferPtr sharedBuffer(GpuLowerContext &cx, const std::string &prefix, DType dtype, int64_t size) {
  BufferPtr buffer = makeBuffer(cx.names.name(prefix), dtype, size, MemScope::Shared);
  cx.shared.push_back(buffer);
  return buffer;
}

State RegisterState::load() const {
  State state;
  for (const BufferPtr &b : buffers)
    state.push_back(kir::load(b, kir::index(0)));
  return state;
}

StmtPtr RegisterState::store(const State &state, VarNames &names) const {
  std::vector<StoreSpec> stores;
  for (size_t j = 0; j < buffers.size(); ++j)
    stores.push_back({buffers[j], kir::index(0), state[j]});
  return storesBound(std::move(stores), names);
}

StmtPtr RegisterState::allocateAround(StmtPtr body) const {
  for (size_t j = buffers.size(); j-- > 0;)
    body = allocate(buffers[j], body);
  return body;
}

RegisterState registerState(VarNames &names, const std::string &prefix,
                            const std::vector<Type> &types) {
  RegisterState state;
  for (const Type &type : types)
    state.buffers.push_back(makeBuffer(names.name(prefix), type.dtype, 1, MemScope::Register));
  return state;
}

int64_t nextPowerOfTwo(int64_t n) {
  int64_t p = 1;
  while (p < n)
    p *= 2;
  return p;
}

Expected<int64_t> threadsPerRow(const passes::FusionGroup &group, int threadsPerBlock,
                                int rowsPerBlock, const codegen::GpuTarget &target) {
  auto invalid = [&](std::string why) {
    return std::unexpected(Error(ErrorCode::InvalidArgument,
                                 fmt::format("lowering: GPU schedule of group {} ({}): {}",
                                             group.id, group.root->name(), why)));
  };
  if (threadsPerBlock < 1 || threadsPerBlock > target.maxThreadsPerBlock)
    return invalid(fmt::format("threadsPerBlock {} is not in [1, {}]", threadsPerBlock,
                               target.maxThreadsPerBlock));
  if (rowsPerBlock < 1 || threadsPerBlock % rowsPerBlock != 0)
    return invalid(fmt::format("rowsPerBlock {} does not divide threadsPerBlock {}", rowsPerBlock,
                               threadsPerBlock));
  int64_t perRow = threadsPerBlock / rowsPerBlock;
  if (nextPowerOfTwo(perRow) != perRow)
    return invalid(fmt::format("threads per row {} (threadsPerBlock / rowsPerBlock) is not a "
                               "power of two",
                               perRow));
  // shfl.sync names the whole warp: every lane of it must exist.
  if (perRow > 1 && threadsPerBlock % target.warpSize != 0)
    return invalid(fmt::format("threadsPerBlock {} is not a whole number of warps, which rows "
                               "reduced with shuffles need",
                               threadsPerBlock));
  return perRow;
}

} // namespace kiln::lower
