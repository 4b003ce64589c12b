// Recognizing the conv2d groups cuDNN computes exactly: the conv itself, then
// an epilogue walked from the conv's result to the group's root.
#include "compiler/tuning/CudnnCandidate.h"

#include "ir/graph/Attribute.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace kiln::tuning {
namespace {

using runtime::cudnn::Conv2DProblem;
using runtime::cudnn::ConvLayout;

constexpr const char *kWhatCudnnComputes =
    "cuDNN computes conv2d, then an optional per-channel bias add, then an optional relu";

/// The index of `value` among the group's inputs, or -1.
int inputIndex(const passes::FusionGroup &group, const ir::Value *value) {
  auto found = std::find(group.inputs.begin(), group.inputs.end(), value);
  return found == group.inputs.end() ? -1 : static_cast<int>(found - group.inputs.begin());
}

/// Whether `shape`, aligned to the right of the rank-4 output, varies only
/// along the channel axis, where it has all `channels` values.
bool isPerChannel(const ir::Shape &shape, int channelAxis, int64_t channels) {
  int rank = static_cast<int>(shape.size());
  if (rank > 4 || 4 - rank > channelAxis)
    return false;
  for (int i = 0; i < rank; ++i) {
    int axis = 4 - rank + i;
    if (shape[static_cast<size_t>(i)] != (axis == channelAxis ? channels : 1))
      return false;
  }
  return true;
}

struct BiasTrace {
  int input = -1;                      ///< the group input holding the K bias values
  std::vector<const ir::Node *> nodes; ///< the free reshapes (and broadcast) on the way
  std::string whyNot;
};

/// Follows the add's other operand back to the group input it reshapes or
/// broadcasts, checking that element k of that input lands on channel k.
BiasTrace traceBias(const passes::FusionGroup &group, const ir::Value *operand, int channelAxis,
                    int64_t channels) {
  BiasTrace trace;
  const ir::Value *value = operand;
  // An explicit broadcast_to is allowed as the add's operand itself.
  if (const ir::Node *node = value->definingNode();
      node && group.contains(node) && node->kind() == ir::OpKind::BroadcastTo) {
    trace.nodes.push_back(node);
    value = node->operand(0);
  }
  if (!isPerChannel(value->type().shape, channelAxis, channels)) {
    trace.whyNot = fmt::format("the add's other operand {} is not a per-channel bias over the {} "
                               "output channels (a residual add?)",
                               value->type().str(), channels);
    return trace;
  }
  for (;;) {
    if (int index = inputIndex(group, value); index >= 0) {
      trace.input = index;
      return trace;
    }
    const ir::Node *node = value->definingNode();
    bool freeReshape =
        node && group.contains(node) &&
        (node->kind() == ir::OpKind::Reshape || node->kind() == ir::OpKind::Squeeze ||
         node->kind() == ir::OpKind::Unsqueeze) &&
        node->operand(0)->type().numElements() == channels;
    if (!freeReshape) {
      trace.whyNot = fmt::format("the bias is computed in the group ({}), not read from memory",
                                 node ? std::string(node->name()) : "unknown");
      return trace;
    }
    trace.nodes.push_back(node);
    value = node->operand(0);
  }
}

/// The one user of `value` inside the group, or nullptr when there is none or several.
const ir::Node *onlyUserInGroup(const passes::FusionGroup &group, const ir::Value *value,
                                int &count) {
  const ir::Node *user = nullptr;
  count = 0;
  for (const ir::Use &use : value->uses())
    if (group.contains(use.user)) {
      ++count;
      user = use.user;
    }
  return count == 1 ? user : nullptr;
}

} // namespace

std::variant<CudnnConvSpec, std::string> cudnnConvSpecFor(const ir::Graph &,
                                                          const passes::FusionGroup &group) {
  // A depthwise conv2d anchors a pooling group (kiln's window kernel); cuDNN is a candidate
  // for it as for any other conv2d.
  if (!group.anchor ||
      (group.kind != passes::GroupKind::Contraction && !passes::isDepthwiseConv2D(*group.anchor)))
    return fmt::format("a {} group, not a conv2d contraction", passes::groupKindName(group.kind));
  const ir::Node &conv = *group.anchor;
  if (conv.kind() != ir::OpKind::Conv2D)
    return fmt::format("a {} contraction: only conv2d has a cuDNN candidate (matmul is left to "
                       "kiln's kernels)",
                       conv.name());

  const ir::AttrMap &attrs = conv.attrs();
  DType dtype = conv.operand(0)->type().dtype; // the result's too, for float operands
  DType accumulate = ir::getType(attrs, "accumulate");
  bool floatAccumulate = dtype == DType::F64 ? accumulate == DType::F64 : accumulate == DType::F32;
  if (dtype != DType::F32 && dtype != DType::F16 && dtype != DType::BF16 && dtype != DType::F64)
    return fmt::format("conv2d of {} operands: cuDNN's candidate covers f32, f16, bf16 and f64",
                       dtypeName(dtype));
  if (!floatAccumulate)
    return fmt::format("conv2d of {} operands accumulating in {}: cuDNN accumulates {} in {}",
                       dtypeName(dtype), dtypeName(accumulate), dtypeName(dtype),
                       dtype == DType::F64 ? "f64" : "f32");
  const std::vector<int64_t> &padding = ir::getInts(attrs, "padding");
  if (padding[0] != padding[1] || padding[2] != padding[3])
    return fmt::format("conv2d with padding [{}, {}, {}, {}] (top, bottom, left, right): cuDNN "
                       "pads both sides of an axis alike",
                       padding[0], padding[1], padding[2], padding[3]);

  Conv2DProblem problem;
  problem.dtype = dtype;
  problem.allowTf32 = ir::getBool(attrs, "allow_tf32");
  const std::string &layout = ir::getString(attrs, "layout");
  bool nhwc = layout == "nhwc";
  problem.layout = nhwc ? ConvLayout::Nhwc : ConvLayout::Nchw;
  const ir::Shape &x = conv.operand(0)->type().shape;
  const ir::Shape &w = conv.operand(1)->type().shape;
  const ir::Shape &y = conv.type().shape;
  problem.batch = x[0];
  problem.inChannels = x[nhwc ? 3 : 1];
  problem.height = x[nhwc ? 1 : 2];
  problem.width = x[nhwc ? 2 : 3];
  problem.outChannels = w[0];
  problem.kernelH = w[nhwc ? 1 : 2];
  problem.kernelW = w[nhwc ? 2 : 3];
  problem.outHeight = y[nhwc ? 1 : 2];
  problem.outWidth = y[nhwc ? 2 : 3];
  const std::vector<int64_t> &stride = ir::getInts(attrs, "stride");
  const std::vector<int64_t> &dilation = ir::getInts(attrs, "dilation");
  problem.stride = {stride[0], stride[1]};
  problem.dilation = {dilation[0], dilation[1]};
  problem.padding = {padding[0], padding[2]};
  problem.groups = ir::getInt(attrs, "groups");

  problem.args.x = inputIndex(group, conv.operand(0));
  problem.args.w = inputIndex(group, conv.operand(1));
  if (problem.args.x < 0 || problem.args.w < 0)
    return std::string("conv2d with a fused input prologue: cuDNN reads its operands from memory");

  // The epilogue, from the conv's result to the group's root.
  std::set<const ir::Node *> accounted{&conv};
  const ir::Value *value = conv.result();
  int channelAxis = nhwc ? 3 : 1;
  while (value->definingNode() != group.root) {
    int users = 0;
    const ir::Node *user = onlyUserInGroup(group, value, users);
    if (!user)
      return fmt::format("conv2d epilogue: a value used {} times in the group; {}", users,
                         kWhatCudnnComputes);
    accounted.insert(user);
    if (user->type().shape != y || user->type().dtype != dtype)
      return fmt::format("conv2d epilogue: {} changes the result to {}; {}", user->name(),
                         user->type().str(), kWhatCudnnComputes);
    if (user->kind() == ir::OpKind::Add && !problem.bias && !problem.relu) {
      const ir::Value *other = user->operand(user->operand(0) == value ? 1 : 0);
      if (user->operand(0) == value && user->operand(1) == value)
        return std::string("conv2d epilogue: the result added to itself");
      BiasTrace trace = traceBias(group, other, channelAxis, problem.outChannels);
      if (trace.input < 0)
        return "conv2d epilogue: " + trace.whyNot;
      accounted.insert(trace.nodes.begin(), trace.nodes.end());
      problem.bias = true;
      problem.args.bias = trace.input;
    } else if (user->kind() == ir::OpKind::Relu && !problem.relu) {
      problem.relu = true;
    } else {
      return fmt::format("conv2d epilogue: {}{} is not what cuDNN fuses here; {}", user->name(),
                         problem.relu || problem.bias ? " after the bias/relu" : "",
                         kWhatCudnnComputes);
    }
    value = user->result();
  }
  for (const ir::Node *node : group.nodes)
    if (!accounted.contains(node))
      return fmt::format("the group also computes {} (outside the conv2d's epilogue chain); {}",
                         node->name(), kWhatCudnnComputes);

  problem.args.output = static_cast<int>(group.inputs.size());
  problem.args.count = problem.args.output + 1;
  return CudnnConvSpec{problem};
}

Expected<std::shared_ptr<const runtime::cudnn::CudnnConv2D>>
makeCudnnKernel(const CudnnConvSpec &spec, runtime::cuda::CudaDevice &device,
                const runtime::cudnn::CudnnConvOptions &options) {
  KILN_TRY(std::shared_ptr<runtime::cudnn::CudnnConv2D> kernel,
           runtime::cudnn::CudnnConv2D::create(spec.problem, device, options));
  return std::shared_ptr<const runtime::cudnn::CudnnConv2D>(std::move(kernel));
}

} // namespace kiln::tuning
