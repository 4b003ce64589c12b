// The GPU's lowering table: for each group kind with a GPU kernel, its
// heuristic default schedule (occupancy and wave quantization over the
// target's SMs, threads per row from the row length), the schedule space the
// tuner searches and its lowering (GpuKinds.h; contractions: GpuContraction.h),
// whose kernel is checked against the target's launch limits; and the
// legality check of GPU schedules.
#include "ir/kernel/GpuLaunch.h"
#include "passes/lower/LoweringTable.h"
#include "passes/lower/gpu/GpuContraction.h"
#include "passes/lower/gpu/GpuKinds.h"

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

namespace {

using codegen::GpuTarget;

/// Lowers with the lowering of schedule type S, then checks the launch
/// structure and the static shared memory against the target.
template <typename S, typename F>
Expected<LoweredKernel> lowerWith(const ir::Graph &graph, const passes::FusionGroup &group,
                                  const Schedule &schedule, const GpuTarget &target,
                                  F lowerBody) {
  KILN_TRY(const S *chosen, scheduleOfKind<S>(group, schedule, "GPU schedule"));
  KILN_TRY_VOID(checkGpuSchedule(group, schedule, target));
  GpuLowerContext cx(graph, group, target);
  KILN_TRY(kir::StmtPtr body, lowerBody(cx, *chosen));
  LoweredKernel lowered = finishKernel(group, cx.signature, std::move(body));
  cx.sizes.bind(lowered);
  auto launch = kir::gpuLaunchOf(lowered.kernel, target.maxThreadsPerBlock);
  KILN_CHECK(launch.has_value(), fmt::format("GPU lowering of group {} broke the launch structure: {}",
                                             group.id, launch ? "" : launch.error().message()));
  KILN_CHECK(launch->reservedSharedBytes() <= target.maxSharedBytesPerBlock(),
             fmt::format("GPU lowering of group {} uses {} bytes of shared memory", group.id,
                         launch->sharedBytes));
  return lowered;
}

/// A space that takes only the schedules checkGpuSchedule accepts.
struct GpuSpaceBuilder : SpaceBuilder {
  GpuSpaceBuilder(const passes::FusionGroup &group, const GpuTarget &target, Schedule first)
      : SpaceBuilder{{std::move(first)}}, group(group), target(target) {}
  void add(Schedule s) {
    if (checkGpuSchedule(group, s, target))
      SpaceBuilder::add(std::move(s));
  }
  const passes::FusionGroup &group;
  const GpuTarget &target;
};

// ---- pointwise: a transpose-shaped group whose transpose can be staged takes shared tiles
// (GpuTransposeSchedule)

Schedule pointwiseDefault(const ir::Graph &, const passes::FusionGroup &group,
                          const GpuTarget &target) {
  if (stagedTranspose(group))
    return GpuTransposeSchedule{.tile = 32, .rowsPerPass = 8};
  return defaultPointwise(group, target);
}

std::vector<Schedule> pointwiseSpace(const ir::Graph &graph, const passes::FusionGroup &group,
                                     const GpuTarget &target) {
  GpuSpaceBuilder b(group, target, pointwiseDefault(graph, group, target));
  if (stagedTranspose(group))
    for (int tile : {16, 32, 64})
      for (int rows : {4, 8, 16})
        b.add(GpuTransposeSchedule{.tile = tile, .rowsPerPass = rows});
  GpuPointwiseSchedule base = defaultPointwise(group, target);
  for (int threads : {128, 256, 512})
    for (int vw : {1, base.vectorWidth})
      for (int ept : {1, 4})
        b.add(GpuPointwiseSchedule{.threadsPerBlock = threads, .vectorWidth = vw,
                                   .elementsPerThread = ept,
                                   .maxBlocksPerSm = std::max(1, target.maxThreadsPerSm / threads)});
  return b.space;
}

Expected<LoweredKernel> pointwiseLower(const ir::Graph &graph, const passes::FusionGroup &group,
                                       const Schedule &schedule, const GpuTarget &target) {
  if (std::holds_alternative<GpuTransposeSchedule>(schedule))
    return lowerWith<GpuTransposeSchedule>(graph, group, schedule, target, lowerGpuTranspose);
  return lowerWith<GpuPointwiseSchedule>(graph, group, schedule, target, lowerGpuPointwise);
}

// ---- reduction and row norm: rows split over threads, or a thread per output column

template <typename S, auto lowerBody> struct RowKind {
  static Schedule defaults(const ir::Graph &, const passes::FusionGroup &group,
                           const GpuTarget &target) {
    std::optional<RowShape> rows = rowShapeOf(group);
    if (!rows)
      return S{.threadsPerBlock = columnThreads(product(group.root->type().shape), target),
               .rowsPerBlock = 1, .vectorWidth = 1};
    int64_t width = defaultRowWidth(rows->length, rows->rows, target);
    int perBlock = defaultRowsPerBlock(width, rows->rows, target);
    int threads = static_cast<int>(width) * perBlock;
    return S{.threadsPerBlock = threads, .rowsPerBlock = perBlock,
             .vectorWidth = reductionVectorWidth(group, *rows, threads / perBlock)};
  }
  static std::vector<Schedule> space(const ir::Graph &graph, const passes::FusionGroup &group,
                                     const GpuTarget &target) {
    GpuSpaceBuilder b(group, target, defaults(graph, group, target));
    if (rowShapeOf(group)) {
      int vw = std::clamp(16 / widestStorageBytes(group), 1, 8);
      for (int width : {1, 4, 8, 32, 128, 512})
        for (int rows : {1, 4, 8})
          if (width * rows <= target.maxThreadsPerBlock)
            for (int v : {1, vw})
              b.add(S{.threadsPerBlock = width * rows, .rowsPerBlock = rows, .vectorWidth = v});
    } else {
      for (int threads : {64, 128, 256, 512})
        b.add(S{.threadsPerBlock = threads, .rowsPerBlock = 1});
    }
    return b.space;
  }
  static Expected<LoweredKernel> lower(const ir::Graph &graph, const passes::FusionGroup &group,
                                       const Schedule &schedule, const GpuTarget &target) {
    return lowerWith<S>(graph, group, schedule, target, lowerBody);
  }
  static constexpr KindLowering<GpuTarget> entry{defaults, space, lower};
};

// ---- pooling: a thread per output element

Schedule poolingDefault(const ir::Graph &, const passes::FusionGroup &group,
                        const GpuTarget &target) {
  return GpuPoolingSchedule{.threadsPerBlock = columnThreads(product(group.root->type().shape), target)};
}

std::vector<Schedule> poolingSpace(const ir::Graph &graph, const passes::FusionGroup &group,
                                   const GpuTarget &target) {
  GpuSpaceBuilder b(group, target, poolingDefault(graph, group, target));
  for (int threads : {64, 128, 256, 512})
    b.add(GpuPoolingSchedule{.threadsPerBlock = threads});
  return b.space;
}

Expected<LoweredKernel> poolingLower(const ir::Graph &graph, const passes::FusionGroup &group,
                                     const Schedule &schedule, const GpuTarget &target) {
  return lowerWith<GpuPoolingSchedule>(graph, group, schedule, target, lowerGpuPooling);
}

constexpr KindLowering<GpuTarget> kPointwise{pointwiseDefault, pointwiseSpace, pointwiseLower};
constexpr KindLowering<GpuTarget> kPooling{poolingDefault, poolingSpace, poolingLower};
constexpr KindLowering<GpuTarget> kContraction{defaultGpuContractionSchedule,
                                               gpuContractionScheduleSpace,
                                               lowerContractionForGpu};

} // namespace

const KindLowering<GpuTarget> *gpuKindLowering(passes::GroupKind kind) {
  switch (kind) {
  case passes::GroupKind::Pointwise: return &kPointwise;
  case passes::GroupKind::Reduction:
    return &RowKind<GpuReductionSchedule, lowerGpuReduction>::entry;
  case passes::GroupKind::RowNorm: return &RowKind<GpuRowNormSchedule, lowerGpuRowNorm>::entry;
  case passes::GroupKind::Pooling: return &kPooling;
  case passes::GroupKind::Contraction: return &kContraction;
  case passes::GroupKind::Constant:
  case passes::GroupKind::Alias:
  case passes::GroupKind::Opaque: return nullptr;
  }
  KILN_UNREACHABLE("gpuKindLowering: group kind");
}

} // namespace kiln::lower
