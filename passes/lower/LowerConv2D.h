// conv2d (nchw and nhwc, stride, padding, dilation, groups) as an implicit GEMM problem, which
// the contraction lowering (LowerContraction.cpp) hands to every target's GEMM template: the
// im2col matrix is never materialized, its elements are read from the input while packing or
// staging tiles (Im2col) or by the CPU micro-kernel itself (Direct); and the CPU's conv2d
// schedules.
#pragma once

#include "codegen/Target.h"
#include "ir/graph/Graph.h"
#include "passes/lower/GemmSchedule.h"
#include "passes/lower/GemmTemplate.h"
#include "passes/lower/Schedule.h"

#include <vector>

namespace kiln::lower {

/// The GEMM a conv2d node becomes with `algorithm`:
///   Im2col nchw: per (image, group) C[o][p] = W[o][(c,kh,kw)] X[(c,kh,kw)][p];
///   Im2col nhwc and Direct nhwc: per group C[p][o] = X[p][(kh,kw,c)] W^T[(kh,kw,c)][o], p over
///     every image's pixels;
///   Direct nchw: C[p][o] = X^T[p][(c,kh,kw)] W^T[(c,kh,kw)][o] per (image, group), or per
///     group with p over every image's pixels when images are small (at most 256 pixels).
GemmShape conv2DGemmShape(const ir::Node &conv, Conv2DSchedule::Algorithm algorithm);

/// The heuristic schedule of a conv2d: Direct when a group's output channels fill at least
/// half a vector, else Im2col (narrow groups, such as a depthwise channel multiplier of 2;
/// depthwise convolutions themselves are pooling groups, passes::isDepthwiseConv2D).
Conv2DSchedule defaultConv2DSchedule(const ir::Node &conv, const codegen::CpuTarget &target);

/// Both algorithms with their GEMM schedule spaces (the default first).
std::vector<Conv2DSchedule> conv2DScheduleSpace(const ir::Node &conv,
                                                const codegen::CpuTarget &target);

class ContractionKernel;
class RuntimeSizes;

/// The GEMM problem of a conv2d with `algorithm` (the orientation of conv2DGemmShape, the
/// implicit-im2col element functions, the fused epilogue through `kernel`), shared by the CPU
/// and GPU templates.
GemmProblem conv2DGemmProblem(const ir::Node &conv, Conv2DSchedule::Algorithm algorithm,
                              ContractionKernel &kernel);

/// A conv2d of a symbolic batch (docs/dynamic-shapes.md): the run's images in its GEMM, as the
/// rows (`problem.runtimeM`, where conv2DGemmShape puts every image's pixels in M) or the
/// batch (`problem.runtimeBatch`, one GEMM per image and group).
void setConv2DRuntimeImages(const ir::Node &conv, Conv2DSchedule::Algorithm algorithm,
                            RuntimeSizes &sizes, GemmProblem &problem);

} // namespace kiln::lower
