// Which conv2d fusion groups cuDNN can compute exactly, as a cuDNN problem,
// and the kernel that computes one: the tuner's "cudnn" candidate (docs/cudnn.md).
#pragma once

#include "ir/graph/Graph.h"
#include "passes/graph/Fusion.h"
#include "runtime/cudnn/CudnnConv2D.h"
#include "support/Error.h"

#include <memory>
#include <string>
#include <variant>

namespace kiln::runtime::cuda {
class CudaDevice;
}

namespace kiln::tuning {

/// A conv2d group in cuDNN's terms. problem.args maps the group's kernel
/// arguments (FusionGroup::inputs in order, then the output) to x, w and bias.
struct CudnnConvSpec {
  runtime::cudnn::Conv2DProblem problem;
};

/// The spec of `group` when cuDNN computes exactly what kiln's kernel would:
/// a conv2d (f32, f16, bf16 or f64 with kiln's accumulation; nchw or nhwc;
/// any stride, dilation and groups; padding alike on both sides), optionally
/// followed by an add of a per-channel bias broadcast over the output
/// channels, optionally followed by relu, in that order. Otherwise the reason
/// it is not a candidate, e.g. "conv2d epilogue: gelu is not ... ".
std::variant<CudnnConvSpec, std::string> cudnnConvSpecFor(const ir::Graph &graph,
                                                          const passes::FusionGroup &group);

/// The cuDNN kernel for `spec` on `device` (CudnnConv2D::create: the algorithm
/// is measured unless `options` fix it). Its configText() is the tuning
/// record's schedule text and its record's backend is "cudnn". Converts to a
/// shared_ptr<const runtime::DeviceKernel> for a launch plan step.
Expected<std::shared_ptr<const runtime::cudnn::CudnnConv2D>>
makeCudnnKernel(const CudnnConvSpec &spec, runtime::cuda::CudaDevice &device,
                const runtime::cudnn::CudnnConvOptions &options = {});

} // namespace kiln::tuning
