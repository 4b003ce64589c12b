// GPU schedules: the heuristic default of each group kind (occupancy and
// wave quantization over the target's SMs, threads per row from the row
// length), the schedule space the tuner searches, and the legality check.
#include "passes/lower/gpu/GpuContraction.h"
#include "passes/lower/gpu/GpuKinds.h"
#include "passes/lower/gpu/GpuLower.h"

#include <fmt/format.h>

#include <algorithm>

namespace kiln::lower {

namespace {

using ir::OpKind;

/// The widest element any of the group's global buffers holds, in bytes (a
/// vector access of every buffer must fit 16 bytes).
int widestStorageBytes(const passes::FusionGroup &group) {
  int bytes = dtypeByteSize(group.root->type().dtype);
  for (const ir::Value *input : group.inputs)
    bytes = std::max(bytes, dtypeByteSize(input->type().dtype));
  return std::max(bytes, 1);
}

int64_t wrapAxis(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

/// How a reduction or row-norm group splits into rows: the row length and
/// the number of rows, or nullopt when it runs a thread per output column.
struct RowShape {
  int64_t rows = 1, length = 1;
};

std::optional<RowShape> rowShapeOf(const passes::FusionGroup &group) {
  const ir::Node &anchor = *group.anchor;
  const ir::Shape &shape = anchor.operand(0)->type().shape;
  int64_t rank = static_cast<int64_t>(shape.size());
  if (group.kind == passes::GroupKind::Reduction) {
    ReductionPlan plan = planReduction(anchor);
    if (!shape.empty() && !plan.reduced.back())
      return std::nullopt;
    return RowShape{std::max<int64_t>(product(shape), 1) / std::max<int64_t>(plan.count, 1), plan.count};
  }
  size_t axis = static_cast<size_t>(wrapAxis(ir::getInt(anchor.attrs(), "axis"), rank));
  int64_t after = product(std::span(shape).subspan(axis));
  if (anchor.kind() == OpKind::LayerNorm)
    return RowShape{product(std::span(shape).first(axis)), after};
  if (product(std::span(shape).subspan(axis + 1)) != 1)
    return std::nullopt;
  return RowShape{product(shape) / std::max<int64_t>(shape[axis], 1), shape[axis]};
}

/// Threads per row from the row length: a thread per element up to a warp,
/// a warp for rows up to 512, then more warps so each thread handles ~16-32
/// elements; 1024 for very long rows too few to fill the SMs one per block.
int64_t defaultRowWidth(int64_t length, int64_t rows, const codegen::GpuTarget &target) {
  if (length <= 32)
    return nextPowerOfTwo(std::max<int64_t>(length, 1));
  if (length <= 512)
    return 32;
  if (length <= 4096)
    return 128;
  if (length >= 16384 && rows < target.numSms)
    return std::min(1024, target.maxThreadsPerBlock);
  return 256;
}

/// Rows per block for `width` threads per row: blocks of up to 256 threads,
/// fewer rows while the grid would not cover every SM twice, but at least a
/// whole warp per block when rows shuffle.
int defaultRowsPerBlock(int64_t width, int64_t rows, const codegen::GpuTarget &target) {
  int64_t perBlock = std::max<int64_t>(1, 256 / width);
  int64_t fewest = width > 1 ? std::max<int64_t>(1, target.warpSize / width) : 1;
  while (perBlock > fewest && ceilDiv(rows, perBlock) < 2 * target.numSms)
    perBlock /= 2;
  return static_cast<int>(perBlock);
}

/// Threads per block for a thread per output element: 256, or 128 when a
/// grid of 256-thread blocks would leave SMs idle.
int columnThreads(int64_t outputs, const codegen::GpuTarget &target) {
  return ceilDiv(outputs, 256) < target.numSms ? 128 : 256;
}

GpuPointwiseSchedule defaultPointwise(const passes::FusionGroup &group, const codegen::GpuTarget &target) {
  int vw = std::clamp(16 / widestStorageBytes(group), 1, 8);
  int64_t chunks = ceilDiv(product(group.root->type().shape), vw);
  int threads = columnThreads(chunks, target);
  return GpuPointwiseSchedule{.threadsPerBlock = threads, .vectorWidth = vw, .elementsPerThread = 1,
                              .maxBlocksPerSm = std::max(1, target.maxThreadsPerSm / threads)};
}

bool stagedTranspose(const passes::FusionGroup &group) {
  auto read = findTransposedRead(group);
  return read && read->stageable;
}

/// 16-byte vectors for a row kernel whose rows run along the innermost axis
/// and hold whole vectors, whose operand reads some input elementwise, and
/// whose rows give every thread at least two vectors; else 1.
int reductionVectorWidth(const passes::FusionGroup &group, const RowShape &rows, int64_t width) {
  const ir::Value *operand = group.anchor->operand(0);
  const ir::Shape &shape = operand->type().shape;
  int vw = std::clamp(16 / widestStorageBytes(group), 1, 8);
  bool alongInnermost = true;
  if (group.kind == passes::GroupKind::RowNorm && group.anchor->kind() != OpKind::LayerNorm)
    alongInnermost = wrapAxis(ir::getInt(group.anchor->attrs(), "axis"), static_cast<int64_t>(shape.size())) + 1 ==
                     static_cast<int64_t>(shape.size());
  if (!alongInnermost || shape.empty() || shape.back() % vw != 0 || rows.length < 2 * width * vw ||
      vectorReadInputs(group, operand).empty())
    return 1;
  return vw;
}

Error invalid(const passes::FusionGroup &group, const std::string &why) {
  return Error(ErrorCode::InvalidArgument, fmt::format("lowering: GPU schedule of group {} ({}): {}",
                                                       group.id, group.root->name(), why));
}

struct Checker {
  const passes::FusionGroup &group;
  const codegen::GpuTarget &target;

  Expected<void> threads(int count) const {
    if (count < 1 || count > target.maxThreadsPerBlock)
      return std::unexpected(invalid(group, fmt::format("threadsPerBlock {} is not in [1, {}]", count,
                                                        target.maxThreadsPerBlock)));
    return {};
  }
  Expected<void> vectorWidth(int lanes) const {
    if (lanes < 1 || nextPowerOfTwo(lanes) != lanes || lanes * widestStorageBytes(group) > 16)
      return std::unexpected(invalid(group, fmt::format("vectorWidth {} is not a power of two of at "
                                                        "most 16 bytes of the group's widest buffer",
                                                        lanes)));
    return {};
  }
  Expected<void> operator()(const GpuPointwiseSchedule &s) const {
    KILN_TRY_VOID(threads(s.threadsPerBlock));
    KILN_TRY_VOID(vectorWidth(s.vectorWidth));
    if (s.elementsPerThread < 1 || s.maxBlocksPerSm < 1)
      return std::unexpected(invalid(group, "elementsPerThread and maxBlocksPerSm must be positive"));
    return {};
  }
  Expected<void> operator()(const GpuTransposeSchedule &s) const {
    if (s.tile < 1 || s.rowsPerPass < 1 || s.tile % s.rowsPerPass != 0)
      return std::unexpected(invalid(group, fmt::format("rowsPerPass {} does not divide tile {}",
                                                        s.rowsPerPass, s.tile)));
    KILN_TRY_VOID(threads(s.tile * s.rowsPerPass));
    int64_t shared = int64_t{s.tile} * (s.tile + 1) * widestStorageBytes(group);
    if (shared > target.staticSharedBytesPerBlock)
      return std::unexpected(invalid(group, fmt::format("tile {} needs {} bytes of shared memory, over {}",
                                                        s.tile, shared, target.staticSharedBytesPerBlock)));
    return {};
  }
  Expected<void> operator()(const GpuReductionSchedule &s) const {
    KILN_TRY_VOID(threadsPerRow(group, s.threadsPerBlock, s.rowsPerBlock, target));
    return vectorWidth(s.vectorWidth);
  }
  Expected<void> operator()(const GpuRowNormSchedule &s) const {
    KILN_TRY_VOID(threadsPerRow(group, s.threadsPerBlock, s.rowsPerBlock, target));
    return vectorWidth(s.vectorWidth);
  }
  Expected<void> operator()(const GpuPoolingSchedule &s) const { return threads(s.threadsPerBlock); }
  template <typename T> Expected<void> operator()(const T &) const { return {}; }
};

} // namespace

Expected<void> checkGpuSchedule(const passes::FusionGroup &group, const Schedule &schedule,
                                const codegen::GpuTarget &target) {
  return std::visit(Checker{group, target}, schedule);
}

Schedule defaultGpuSchedule(const ir::Graph &graph, const passes::FusionGroup &group,
                            const codegen::GpuTarget &target) {
  switch (group.kind) {
  case passes::GroupKind::Contraction: return defaultGpuContractionSchedule(graph, group, target);
  case passes::GroupKind::Pointwise:
    if (stagedTranspose(group))
      return GpuTransposeSchedule{.tile = 32, .rowsPerPass = 8};
    return defaultPointwise(group, target);
  case passes::GroupKind::Reduction:
  case passes::GroupKind::RowNorm: {
    std::optional<RowShape> rows = rowShapeOf(group);
    int threads = 256, perBlock = 1;
    if (rows) {
      int64_t width = defaultRowWidth(rows->length, rows->rows, target);
      perBlock = defaultRowsPerBlock(width, rows->rows, target);
      threads = static_cast<int>(width) * perBlock;
    } else {
      threads = columnThreads(product(group.root->type().shape), target);
    }
    if (group.kind == passes::GroupKind::Reduction)
      return GpuReductionSchedule{.threadsPerBlock = threads, .rowsPerBlock = perBlock,
                                  .vectorWidth = rows ? reductionVectorWidth(group, *rows, threads / perBlock) : 1};
    return GpuRowNormSchedule{.threadsPerBlock = threads, .rowsPerBlock = perBlock,
                              .vectorWidth = rows ? reductionVectorWidth(group, *rows, threads / perBlock) : 1};
  }
  case passes::GroupKind::Pooling:
    return GpuPoolingSchedule{.threadsPerBlock = columnThreads(product(group.root->type().shape), target)};
  default: return NoSchedule{};
  }
}

std::vector<Schedule> gpuScheduleSpace(const ir::Graph &graph, const passes::FusionGroup &group,
                                       const codegen::GpuTarget &target) {
  if (group.kind == passes::GroupKind::Contraction)
    return gpuContractionScheduleSpace(graph, group, target);
  std::vector<Schedule> space{defaultGpuSchedule(graph, group, target)};
  auto addUnique = [&](Schedule s) {
    if (!checkGpuSchedule(group, s, target))
      return;
    std::string text = scheduleStr(s);
    for (const Schedule &have : space)
      if (scheduleStr(have) == text)
        return;
    space.push_back(std::move(s));
  };
  switch (group.kind) {
  case passes::GroupKind::Pointwise: {
    if (stagedTranspose(group))
      for (int tile : {16, 32, 64})
        for (int rows : {4, 8, 16})
          addUnique(GpuTransposeSchedule{.tile = tile, .rowsPerPass = rows});
    GpuPointwiseSchedule base = defaultPointwise(group, target);
    for (int threads : {128, 256, 512})
      for (int vw : {1, base.vectorWidth})
        for (int ept : {1, 4})
          addUnique(GpuPointwiseSchedule{.threadsPerBlock = threads, .vectorWidth = vw,
                                         .elementsPerThread = ept,
                                         .maxBlocksPerSm = std::max(1, target.maxThreadsPerSm / threads)});
    break;
  }
  case passes::GroupKind::Reduction:
  case passes::GroupKind::RowNorm:
    if (rowShapeOf(group)) {
      int vw = std::clamp(16 / widestStorageBytes(group), 1, 8);
      for (int width : {1, 4, 8, 32, 128, 512})
        for (int rows : {1, 4, 8})
          if (width * rows <= target.maxThreadsPerBlock) {
            if (group.kind == passes::GroupKind::Reduction)
              for (int v : {1, vw})
                addUnique(GpuReductionSchedule{.threadsPerBlock = width * rows, .rowsPerBlock = rows,
                                               .vectorWidth = v});
            else
              for (int v : {1, vw})
                addUnique(GpuRowNormSchedule{.threadsPerBlock = width * rows, .rowsPerBlock = rows,
                                             .vectorWidth = v});
          }
    } else {
      for (int threads : {64, 128, 256, 512}) {
        if (group.kind == passes::GroupKind::Reduction)
          addUnique(GpuReductionSchedule{.threadsPerBlock = threads, .rowsPerBlock = 1});
        else
          addUnique(GpuRowNormSchedule{.threadsPerBlock = threads, .rowsPerBlock = 1});
      }
    }
    break;
  case passes::GroupKind::Pooling:
    for (int threads : {64, 128, 256, 512})
      addUnique(GpuPoolingSchedule{.threadsPerBlock = threads});
    break;
  default: break;
  }
  return space;
}

} // namespace kiln::lower
