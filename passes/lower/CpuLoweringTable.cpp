// The CPU's lowering table: for each group kind with a CPU kernel, its default
// schedule (vector widths from the target's registers, a parallel threshold),
// its schedule space and its lowering (LowerKinds.h; contractions:
// LowerContraction.h).
#include "passes/lower/LowerContraction.h"
#include "passes/lower/LowerKinds.h"
#include "passes/lower/LoweringTable.h"

#include <algorithm>

namespace kiln::lower {

namespace {

using codegen::CpuTarget;

/// The widest element the group computes with, in bytes (narrow floats
/// compute in f32; float sums accumulate in f64).
int widestComputeBytes(const passes::FusionGroup &group) {
  int bytes = 4;
  auto consider = [&](DType dtype) {
    bytes = std::max(bytes, isNarrowFloat(dtype) ? 4 : dtypeByteSize(dtype));
  };
  for (const ir::Node *node : group.nodes) {
    consider(node->type().dtype);
    for (const ir::Value *operand : node->operands())
      consider(operand->type().dtype);
  }
  if (group.anchor != nullptr) {
    switch (group.anchor->kind()) {
    case ir::OpKind::ReduceSum:
    case ir::OpKind::ReduceMean:
    case ir::OpKind::ReduceProd:
    case ir::OpKind::AvgPool2D:
    case ir::OpKind::GlobalAvgPool:
    case ir::OpKind::LayerNorm:
      if (isFloatingPoint(group.anchor->operand(0)->type().dtype))
        bytes = 8;
      break;
    default: break;
    }
  }
  return bytes;
}

/// Elements of the group's widest type in one vector register.
int registerLanes(const passes::FusionGroup &group, const CpuTarget &target) {
  return std::max(1, target.vectorBits / (8 * widestComputeBytes(group)));
}

/// Below this many elements, handing work to the thread pool costs more than
/// it saves; element-heavy kernels (transcendentals, windows) break even earlier.
int64_t parallelThreshold(const passes::FusionGroup &group) {
  if (group.kind == passes::GroupKind::RowNorm || group.kind == passes::GroupKind::Pooling)
    return int64_t{1} << 14;
  return int64_t{1} << 15;
}

/// The parallel thresholds a space tries around the default's.
std::vector<int64_t> thresholdsAround(const passes::FusionGroup &group) {
  int64_t threshold = parallelThreshold(group);
  return {threshold / 4, threshold, threshold * 4};
}

/// Lowers with the lowering of schedule type S into a finished kernel.
template <typename S, typename F>
Expected<LoweredKernel> lowerWith(const ir::Graph &graph, const passes::FusionGroup &group,
                                  const Schedule &schedule, const CpuTarget &target, F lowerBody) {
  KILN_TRY(const S *chosen, scheduleOfKind<S>(group, schedule, "schedule"));
  LowerContext cx(graph, group, target);
  KILN_TRY(kir::StmtPtr body, lowerBody(cx, *chosen));
  LoweredKernel lowered = finishKernel(group, cx.signature, std::move(body));
  cx.sizes.bind(lowered);
  return lowered;
}

// ---- pointwise: a transpose-shaped group takes square tiles (TransposeSchedule)

/// 64 x 64 tiles: with 32, an NHWC -> NCHW transpose writes 32 rows of 128 bytes per tile into
/// planes whose distance is a multiple of 4 KiB (224 x 224 floats), which collide in the same
/// L1 sets; 64-wide rows halve the streams and double each run. Zen 5, two threads,
/// [16, 224, 224, 64] -> [16, 64, 224, 224]: 84.5 ms with 32, 30.9 with 64 (a copy of the same
/// bytes 20 ms); the reverse 42.9 -> 26.6; [16, 56, 56, 256] 18.0 -> 15.9; [4, 112, 112, 128]
/// 2.55 -> 2.12; [16, 28, 28, 512] 4.75 -> 4.95.
constexpr int64_t kDefaultTransposeTile = 64;

Schedule pointwiseDefault(const ir::Graph &, const passes::FusionGroup &group,
                          const CpuTarget &target) {
  if (transposedAxis(group))
    return TransposeSchedule{.tile = kDefaultTransposeTile,
                             .minParallelWork = parallelThreshold(group)};
  return PointwiseSchedule{.vectorWidth = registerLanes(group, target),
                           .minParallelWork = parallelThreshold(group)};
}

std::vector<Schedule> pointwiseSpace(const ir::Graph &graph, const passes::FusionGroup &group,
                                     const CpuTarget &target) {
  SpaceBuilder b{{pointwiseDefault(graph, group, target)}};
  for (int64_t tile : {16, 32, 64, 128})
    if (transposedAxis(group))
      b.add(TransposeSchedule{.tile = tile, .minParallelWork = parallelThreshold(group)});
  int lanes = registerLanes(group, target);
  for (int vw : {lanes, 2 * lanes})
    for (int64_t t : thresholdsAround(group))
      b.add(PointwiseSchedule{.vectorWidth = vw, .minParallelWork = t});
  return b.space;
}

Expected<LoweredKernel> pointwiseLower(const ir::Graph &graph, const passes::FusionGroup &group,
                                       const Schedule &schedule, const CpuTarget &target) {
  if (std::holds_alternative<TransposeSchedule>(schedule))
    return lowerWith<TransposeSchedule>(graph, group, schedule, target, lowerTranspose);
  return lowerWith<PointwiseSchedule>(graph, group, schedule, target, lowerPointwise);
}

// ---- reduction, row norm, pooling: a vector width and a parallel threshold each

/// The kinds whose schedule is {vectorWidth, minParallelWork}: two registers of
/// partial accumulators by default, which hide the latency of the adds.
template <typename S, auto lowerBody> struct VectorKind {
  static Schedule defaults(const ir::Graph &, const passes::FusionGroup &group,
                           const CpuTarget &target) {
    return S{.vectorWidth = 2 * registerLanes(group, target),
             .minParallelWork = parallelThreshold(group)};
  }
  static std::vector<Schedule> space(const ir::Graph &graph, const passes::FusionGroup &group,
                                     const CpuTarget &target) {
    SpaceBuilder b{{defaults(graph, group, target)}};
    int lanes = registerLanes(group, target);
    for (int vw : {lanes, 2 * lanes, 4 * lanes})
      for (int64_t t : thresholdsAround(group))
        b.add(S{.vectorWidth = vw, .minParallelWork = t});
    return b.space;
  }
  static Expected<LoweredKernel> lower(const ir::Graph &graph, const passes::FusionGroup &group,
                                       const Schedule &schedule, const CpuTarget &target) {
    return lowerWith<S>(graph, group, schedule, target, lowerBody);
  }
  static constexpr KindLowering<CpuTarget> entry{defaults, space, lower};
};

constexpr KindLowering<CpuTarget> kPointwise{pointwiseDefault, pointwiseSpace, pointwiseLower};
constexpr KindLowering<CpuTarget> kContraction{defaultContractionSchedule, contractionScheduleSpace,
                                               lowerContractionForCpu};

} // namespace

const KindLowering<CpuTarget> *cpuKindLowering(passes::GroupKind kind) {
  switch (kind) {
  case passes::GroupKind::Pointwise: return &kPointwise;
  case passes::GroupKind::Reduction: return &VectorKind<ReductionSchedule, lowerReduction>::entry;
  case passes::GroupKind::RowNorm: return &VectorKind<RowNormSchedule, lowerRowNorm>::entry;
  case passes::GroupKind::Pooling: return &VectorKind<PoolingSchedule, lowerPooling>::entry;
  case passes::GroupKind::Contraction: return &kContraction;
  case passes::GroupKind::Constant:
  case passes::GroupKind::Alias:
  case passes::GroupKind::Opaque: return nullptr;
  }
  KILN_UNREACHABLE("cpuKindLowering: group kind");
}

} // namespace kiln::lower
