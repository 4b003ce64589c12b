// "layout": NCHW convolutions whose operands suit tensor cores run as NHWC;
// "layout-cpu": NCHW convolutions of one group that feed one another do (the CPU pipeline's).
//
// Why: kiln's tensor-core convolution is an implicit GEMM over NHWC tensors
// (a tap's channels are contiguous), so an NCHW model — the DSL's default —
// kept its convolutions on CUDA cores under bf16-mixed. On the CPU the direct
// kernel reads a tap's channels as one contiguous run in NHWC, where NCHW
// spreads them over channel planes H*W apart (VGG16 at batch 1, Zen 5, two
// threads: 281 ms as NCHW, 115 ms as NHWC; docs/lowering.md). Rewriting each such
// conv2d as transpose -> conv2d(layout nhwc) -> transpose back puts it on
// tensor cores; the transposes are then sunk through the elementwise ops,
// batch norms and pools that follow, until a transpose back meets the next
// convolution's transpose in and "simplify" cancels the pair. What stays is a
// transpose at the edges of each run of convolutions (the model's input, the
// flatten before the classifier).
//
// Every rewrite moves data only: the graph computes the same values.
//
// The rules, each documented in docs/passes.md:
//   conv2d(x, w) {layout nchw, groups 1, f16/bf16/e4m3 operands (or f32
//       allowing tf32) whose channel runs fill 4-byte pairs}
//     -> transpose(conv2d(transpose(x, [0,2,3,1]), transpose(w, [0,2,3,1]),
//                         layout nhwc), [0,3,1,2])
//   elementwise(transpose(x, p), others...) -> transpose(elementwise(x, others'), p)
//       for p = [0,3,1,2] (back to NCHW; no other transpose moves) when the
//       transpose has no other use; each other operand is a scalar
//       (kept), a transpose by p (its source), a tensor of at most 1/8 of the
//       result's elements (made full rank and transposed by p's inverse: a bias
//       [1, C, 1, 1] becomes [1, 1, 1, C]), or a value already transposed by the
//       inverse elsewhere in the graph (a residual's shortcut)
//   batch_norm(transpose(x, p), ...) {axis a} -> transpose(batch_norm(x, ...) {axis p[a]}, p)
//   max_pool2d / avg_pool2d / global_avg_pool (transpose(x, [0,3,1,2])) {layout nchw}
//     -> transpose(pool(x) {layout nhwc}, [0,3,1,2])
#include "passes/graph/GraphPasses.h"

#include "ir/graph/Graph.h"
#include "passes/graph/Fusion.h"
#include "passes/graph/ReplaceNodes.h"

#include <algorithm>
#include <set>

namespace kiln::passes {

namespace {

using ir::Node;
using ir::OpKind;
using ir::Value;

const std::vector<int64_t> kToNhwc = {0, 2, 3, 1};
const std::vector<int64_t> kToNchw = {0, 3, 1, 2};

/// A transpose feeding only `user`'s operands, with its permutation.
struct SinkableTranspose {
  Node *node = nullptr;
  std::vector<int64_t> perm;
};

std::vector<int64_t> inverseOf(const std::vector<int64_t> &perm) {
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i)
    inverse[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
  return inverse;
}

Node *transposeOf(const Value *value) {
  Node *node = value->definingNode();
  return node && node->kind() == OpKind::Transpose ? node : nullptr;
}

/// Whether the implicit-GEMM convolution can take these operands on tensor
/// cores (as the lowering's gpuMmaKindFor sees them): 16-bit floats, e4m3, or
/// f32 allowing tf32, with each pixel's channels a whole number of 4 bytes.
/// (e4m3 needs sm_89: the pipeline runs this pass under fp8 only there.)
bool suitsTensorCores(const Node &conv) {
  if (ir::getString(conv.attrs(), "layout") != "nchw" || ir::getInt(conv.attrs(), "groups") != 1)
    return false;
  const ir::TensorType &x = conv.operand(0)->type();
  const ir::TensorType &w = conv.operand(1)->type();
  if (x.dtype != w.dtype || x.shape.size() != 4)
    return false;
  bool narrow = x.dtype == DType::F16 || x.dtype == DType::BF16 || x.dtype == DType::F8E4M3;
  bool tf32 = x.dtype == DType::F32 && ir::getBool(conv.attrs(), "allow_tf32");
  if (!narrow && !tf32)
    return false;
  int64_t channelBytes = x.shape[1] * dtypeByteSize(x.dtype);
  return channelBytes % 4 == 0;
}

/// Whether the CPU may run the convolution as NHWC: 4-D operands of one dtype, and one group
/// (the implicit GEMM) or depthwise over at least 8 channels (the window lowering vectorizes
/// NHWC over channels, NCHW over output columns). Other grouped ones keep NCHW, where Im2col
/// puts the pixels on the vector axis.
bool runsAsNhwcOnCpu(const Node &conv) {
  if (ir::getString(conv.attrs(), "layout") != "nchw")
    return false;
  const ir::TensorType &x = conv.operand(0)->type();
  if (x.dtype != conv.operand(1)->type().dtype || x.shape.size() != 4)
    return false;
  if (passes::isDepthwiseConv2D(conv))
    return x.shape[1] >= 8;
  int64_t groups = ir::getInt(conv.attrs(), "groups");
  if (groups == 1)
    return true;
  // Groups of at least 8 channels in and out (RegNet's): Direct reads each tap's channels of a
  // group as one contiguous run in NHWC, where NCHW puts them a channel plane apart.
  int64_t outChannels = conv.operand(1)->type().shape[0];
  return x.shape[1] / groups >= 8 && outChannels / groups >= 8;
}

/// Whether a transpose back to NCHW below `node` can sink through it (the ops `sink` moves it
/// below), so that a convolution's NCHW result can reach another convolution in NHWC.
bool passesLayoutThrough(const Node &node) {
  switch (node.kind()) {
  case OpKind::BatchNorm:
  case OpKind::MaxPool2D:
  case OpKind::AvgPool2D: return true;
  default:
    return node.info().category == ir::OpCategory::Elementwise && node.type().shape.size() == 4;
  }
}

/// The CPU's convolutions whose transposes cancel: each one whose result reaches another's
/// input through elementwise ops, batch norms and pools, and that other one. A convolution on
/// its own would pay a transpose of its input, its filter and its result per run, which cost
/// more than NHWC saves (bench/cpu_bench.cpp, a single NCHW convolution at batch 16: VGG16's
/// conv1_1 19.7 ms kept NCHW against 112 as NHWC between 32 x 32-tiled transposes, conv1_2 181
/// against 292; 64 x 64 tiles cut the transposes by up to 2.7x, not enough to turn that round).
std::set<const Node *> chainedConvolutions(const ir::Graph &graph) {
  std::set<const Node *> chained;
  for (const Node *conv : graph.topologicalOrder()) {
    if (conv->kind() != OpKind::Conv2D || !runsAsNhwcOnCpu(*conv))
      continue;
    std::vector<const Value *> frontier{conv->result()};
    std::set<const Value *> seen;
    while (!frontier.empty()) {
      const Value *value = frontier.back();
      frontier.pop_back();
      if (!seen.insert(value).second)
        continue;
      for (const ir::Use &use : value->uses()) {
        const Node &user = *use.user;
        if (user.kind() == OpKind::Conv2D && use.operandIndex == 0 && runsAsNhwcOnCpu(user)) {
          chained.insert(conv);
          chained.insert(&user);
        } else if (passesLayoutThrough(user)) {
          frontier.push_back(user.result());
        }
      }
    }
  }
  return chained;
}

class NhwcLayout final : public Pass {
public:
  explicit NhwcLayout(NhwcConvolutions which) : which_(which) {}

  std::string_view name() const override {
    return which_ == NhwcConvolutions::TensorCoreOperands ? "layout" : "layout-cpu";
  }
  std::string_view description() const override {
    return which_ == NhwcConvolutions::TensorCoreOperands
               ? "runs NCHW convolutions that suit tensor cores as NHWC and sinks the transposes"
               : "runs NCHW convolutions of one group that feed one another as NHWC and sinks "
                 "the transposes";
  }

  Expected<bool> run(ir::Graph &graph) override {
    bool rewritten = false;
    std::set<const Node *> chained;
    if (which_ == NhwcConvolutions::Chained)
      chained = chainedConvolutions(graph);
    for (Node *node : graph.topologicalOrder()) {
      if (node->kind() != OpKind::Conv2D)
        continue;
      bool convert = which_ == NhwcConvolutions::TensorCoreOperands ? suitsTensorCores(*node)
                                                                    : chained.count(node) > 0;
      if (!convert)
        continue;
      KILN_TRY_VOID(rewriteConv(graph, *node));
      rewritten = true;
    }
    if (!rewritten)
      return false;
    // Sinking a transpose makes one below it, which the same sweep meets at
    // its next user; a sweep that moves nothing ends it.
    for (bool moved = true; moved;) {
      KILN_TRY(moved, replaceNodes(graph, name(), [&](Node &node) { return sink(graph, node); }));
    }
    return true;
  }

private:
  static Expected<void> rewriteConv(ir::Graph &graph, Node &conv) {
    const Location &at = conv.location();
    KILN_TRY(Value * x,
             graph.addNode(OpKind::Transpose, {conv.operand(0)}, {{"perm", kToNhwc}}, at));
    // [O, I, KH, KW] -> [O, KH, KW, I]: the nhwc filter layout.
    KILN_TRY(Value * w,
             graph.addNode(OpKind::Transpose, {conv.operand(1)}, {{"perm", kToNhwc}}, at));
    ir::AttrMap attrs = conv.attrs();
    attrs.insert_or_assign("layout", std::string("nhwc"));
    KILN_TRY(Value * y, graph.addNode(OpKind::Conv2D, {x, w}, std::move(attrs), at));
    KILN_TRY(Value * back, graph.addNode(OpKind::Transpose, {y}, {{"perm", kToNchw}}, at));
    KILN_CHECK(back->type() == conv.type(), "the nhwc convolution has the nchw one's type");
    graph.replaceAllUsesWith(conv.result(), back);
    graph.eraseNode(&conv);
    return {};
  }

  /// A transpose back to NCHW that only its user reads, or only elementwise ops read (a SiLU,
  /// x * sigmoid(x), reads it twice: it sinks below each, and the second finds both of its
  /// operands transposed alike). Only those move: the ones the rewrite and the rules make
  /// towards NHWC (of inputs, filters, biases) stay where they are, so no two rules undo each
  /// other.
  static std::optional<SinkableTranspose> sinkable(const ir::Graph &graph, Value *operand) {
    Node *transpose = transposeOf(operand);
    if (!transpose || graph.isOutput(operand) || ir::getInts(transpose->attrs(), "perm") != kToNchw)
      return std::nullopt;
    bool onlyElementwiseUsers = std::ranges::all_of(operand->uses(), [](const ir::Use &use) {
      return use.user && use.user->info().category == ir::OpCategory::Elementwise;
    });
    if (operand->uses().size() != 1 && !onlyElementwiseUsers)
      return std::nullopt;
    return SinkableTranspose{transpose, kToNchw};
  }

  /// The node's replacement with the transpose below it, or nullptr.
  static Expected<Value *> sink(ir::Graph &graph, Node &node) {
    if (node.numOperands() == 0)
      return nullptr;
    switch (node.kind()) {
    case OpKind::BatchNorm: return sinkBelowBatchNorm(graph, node);
    case OpKind::MaxPool2D:
    case OpKind::AvgPool2D:
    case OpKind::GlobalAvgPool: return sinkBelowPool(graph, node);
    default:
      if (node.info().category == ir::OpCategory::Elementwise)
        return sinkBelowElementwise(graph, node);
      return nullptr;
    }
  }

  static Expected<Value *> sinkBelowElementwise(ir::Graph &graph, Node &node) {
    std::optional<SinkableTranspose> found;
    for (Value *operand : node.operands())
      if ((found = sinkable(graph, operand)))
        break;
    if (!found)
      return nullptr;
    const std::vector<int64_t> &perm = found->perm;
    const ir::TensorType &result = node.type();
    if (result.shape.size() != perm.size())
      return nullptr;
    std::vector<int64_t> inverse = inverseOf(perm);
    // Decide for every operand before changing anything.
    enum class Plan { Keep, Source, Transpose, Existing };
    std::vector<Plan> plans;
    std::vector<Value *> existing(node.numOperands(), nullptr);
    for (size_t i = 0; i < node.numOperands(); ++i) {
      Value *operand = node.operand(i);
      Node *transpose = transposeOf(operand);
      if (transpose && ir::getInts(transpose->attrs(), "perm") == perm) {
        plans.push_back(Plan::Source);
      } else if (operand->type().shape.empty()) {
        plans.push_back(Plan::Keep);
      } else if (Value *already = existingTranspose(operand, inverse)) {
        plans.push_back(Plan::Existing);
        existing[i] = already;
      } else if (operand->type().numElements() * 8 <= result.numElements()) {
        plans.push_back(Plan::Transpose);
      } else {
        return nullptr; // a full-size transpose would only move the cost
      }
    }
    std::vector<Value *> operands;
    const Location &at = node.location();
    for (size_t i = 0; i < node.numOperands(); ++i) {
      Value *operand = node.operand(i);
      switch (plans[i]) {
      case Plan::Keep: operands.push_back(operand); break;
      case Plan::Source: operands.push_back(transposeOf(operand)->operand(0)); break;
      case Plan::Existing: operands.push_back(existing[i]); break;
      case Plan::Transpose: {
        // Broadcasting aligns trailing axes: make it full rank first.
        std::vector<int64_t> shape = operand->type().shape;
        shape.insert(shape.begin(), perm.size() - shape.size(), 1);
        Value *full = operand;
        if (shape != operand->type().shape) {
          KILN_TRY(full, graph.addNode(OpKind::Reshape, {operand}, {{"shape", shape}}, at));
        }
        KILN_TRY(Value * moved, graph.addNode(OpKind::Transpose, {full}, {{"perm", inverse}}, at));
        operands.push_back(moved);
        break;
      }
      }
    }
    KILN_TRY(Value * inner, graph.addNode(node.kind(), std::move(operands), node.attrs(), at));
    return graph.addNode(OpKind::Transpose, {inner}, {{"perm", perm}}, at);
  }

  /// A transpose of `value` by `perm` that the graph already computes (and
  /// uses: the sinking leaves unused transposes behind for "dce").
  static Value *existingTranspose(Value *value, const std::vector<int64_t> &perm) {
    for (const ir::Use &use : value->uses())
      if (use.user && use.user->kind() == OpKind::Transpose &&
          ir::getInts(use.user->attrs(), "perm") == perm && use.user->result()->hasUses())
        return use.user->result();
    return nullptr;
  }

  static Expected<Value *> sinkBelowBatchNorm(ir::Graph &graph, Node &node) {
    std::optional<SinkableTranspose> found = sinkable(graph, node.operand(0));
    if (!found)
      return nullptr;
    auto rank = static_cast<int64_t>(found->perm.size());
    int64_t axis = ir::getInt(node.attrs(), "axis");
    if (axis < 0)
      axis += rank;
    std::vector<Value *> operands = node.operands();
    operands[0] = found->node->operand(0);
    ir::AttrMap attrs = node.attrs();
    attrs.insert_or_assign("axis", found->perm[static_cast<size_t>(axis)]);
    KILN_TRY(Value * inner, graph.addNode(OpKind::BatchNorm, std::move(operands), std::move(attrs),
                                          node.location()));
    return graph.addNode(OpKind::Transpose, {inner}, {{"perm", found->perm}}, node.location());
  }

  static Expected<Value *> sinkBelowPool(ir::Graph &graph, Node &node) {
    std::optional<SinkableTranspose> found = sinkable(graph, node.operand(0));
    if (!found || found->perm != kToNchw || ir::getString(node.attrs(), "layout") != "nchw")
      return nullptr;
    ir::AttrMap attrs = node.attrs();
    attrs.insert_or_assign("layout", std::string("nhwc"));
    KILN_TRY(Value * inner, graph.addNode(node.kind(), {found->node->operand(0)}, std::move(attrs),
                                          node.location()));
    return graph.addNode(OpKind::Transpose, {inner}, {{"perm", kToNchw}}, node.location());
  }

  NhwcConvolutions which_;
};

} // namespace

std::unique_ptr<Pass> createNhwcLayoutPass(NhwcConvolutions which) {
  return std::make_unique<NhwcLayout>(which);
}

} // namespace kiln::passes
