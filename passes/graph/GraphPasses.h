// Factories of the graph passes in passes/graph/, one pass per file. The pass
// manager's registry (PassManager.cpp) names them; tests and pipelines that
// need a pass with options construct it here.
#pragma once

#include "ir/graph/OpTable.h"
#include "passes/PassManager.h"
#include "passes/graph/PrecisionPolicy.h"

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

namespace kiln::passes {

/// Constant folding leaves a node alone when its result has more elements than
/// this: a folded constant stores one double per element in the IR text.
inline constexpr int64_t kMaxFoldedElements = int64_t{1} << 16;
/// ...or when an operand has more elements than this, which bounds the memory
/// the operands take once expanded...
inline constexpr int64_t kMaxFoldOperandElements = int64_t{1} << 20;
/// ...or when evaluating it would take more than this many steps (see
/// foldWorkEstimate), which bounds compile time: a conv2d of two splats can
/// have a small result and small operands yet need 4e10 multiply-adds.
inline constexpr int64_t kMaxFoldWork = 10'000'000;

/// The steps the reference takes to evaluate `node`: result elements times the
/// reduction extent for matmul (K), conv2d (I/groups * KH * KW), pooling
/// (KH * KW) and attention (Lk * (D + Dv) per query row); for everything else
/// the larger of the result's and the operands' element counts (a reduction
/// or a normalization reads each input element a few times). A double, since
/// the product of two element counts can overflow int64.
double foldWorkEstimate(const ir::Node &node);

/// "autodiff": for a graph whose output "loss" is a one-element float value,
/// adds an output "grad.<param>" per parameter (see Autodiff.h).
std::unique_ptr<Pass> createAutodiffPass();
/// "dce": erases nodes whose results are neither used nor outputs.
std::unique_ptr<Pass> createDeadCodeEliminationPass();
/// "cse": merges nodes that compute the same thing.
std::unique_ptr<Pass> createCommonSubexpressionEliminationPass();
/// "fold": evaluates nodes whose operands are all constants.
std::unique_ptr<Pass> createConstantFoldingPass();
/// "simplify": local algebraic identities, to a fixed point.
std::unique_ptr<Pass> createAlgebraicSimplifyPass();
/// "decompose": rewrites composite ops into primitives. With `onlyOps` empty
/// every composite op is decomposed; otherwise only those kinds.
std::unique_ptr<Pass> createDecomposePass(std::vector<ir::OpKind> onlyOps = {});
/// The ops fusion has no kernel for: scaled_dot_product_attention and every
/// composite elementwise op (ir::isCompositeElementwise). A compile pipeline
/// runs createDecomposePass(opsWithoutKernels()) before fusion, which keeps
/// the composites that do have kernels (softmax, layer_norm, ...).
std::vector<ir::OpKind> opsWithoutKernels();
/// "split-concat": a concat of more than kMaxKernelInputs operands becomes a
/// tree of concats along the same axis, each within the bound.
std::unique_ptr<Pass> createSplitWideConcatPass();
/// "precision": applies `policy` to the f32 contractions (matmul, conv2d):
/// tf32 sets allow_tf32; bf16-mixed, fp16-mixed and fp8 cast their operands
/// to bf16, f16 or f8e4m3 (accumulating in f32) and their result back to f32.
std::unique_ptr<Pass> createPrecisionPass(PrecisionPolicy policy);
/// Which NCHW convolutions the layout pass runs as NHWC.
enum class NhwcConvolutions {
  /// "layout": those whose operands suit tensor cores (f16/bf16/e4m3, or f32 allowing tf32).
  TensorCoreOperands,
  /// "layout-cpu": those of one group whose result reaches another's input through
  /// elementwise ops, batch norms and pools, and that other one (the CPU's direct kernel reads
  /// a tap's channels contiguously in NHWC, and their transposes cancel between them).
  Chained,
};
/// "layout" / "layout-cpu": runs the chosen NCHW conv2d as NHWC between transposes, and sinks
/// the transposes through elementwise ops, batch norms and pools ("simplify" then cancels the
/// pairs between convolutions). GPU pipelines run "layout" after "precision", the CPU pipeline
/// "layout-cpu" (CompileOptions::cpuNhwc).
std::unique_ptr<Pass>
createNhwcLayoutPass(NhwcConvolutions which = NhwcConvolutions::TensorCoreOperands);
/// A bound of the convolutions "winograd" rewrites in one layout: the CPU's measurements
/// (docs/winograd.md). Below it the transforms, which move each value through memory, and the
/// batched matmul's thin panels cost more than the multiplies saved.
struct WinogradBounds {
  /// The harmonic mean of the input and output channels, 2 C O / (C + O), at least this:
  /// the matmul's work per transformed value grows with it.
  int64_t minChannelMean = 0;
  /// Output pixels over the batch, N H' W', at least this: the per-run costs (a batched
  /// matmul of 16 products, the transforms' kernels) must be shared by enough of them.
  int64_t minOutputPixels = 0;
};
/// Which convolutions "winograd" rewrites (those within any bound of their layout), and with
/// which output tile.
struct WinogradOptions {
  /// m of F(m x m, 3 x 3): 2 or 4.
  int outputTile = 2;
  /// nchw: its input transform gathers single values (256 in and out pass, 128 in and 256
  /// out do not; one 14 x 14 image breaks even, one 28 x 28 wins).
  std::vector<WinogradBounds> nchw = {{256, 400}};
  /// nhwc: its transforms read and write a pixel's channels with vector loads. 128 channels
  /// win from 7 x 7 (512) or 14 x 14 (128) pixels; 64 -> 128 or 96 -> 96 from 28 x 28 but
  /// not at 14 x 14; 64 -> 64 breaks even.
  std::vector<WinogradBounds> nhwc = {{128, 49}, {80, 784}};
  /// Every convolution of the right form, whatever its size.
  static WinogradOptions anySize(int outputTile = 2) { return {outputTile, {{}}, {{}}}; }
};
/// Whether "winograd" rewrites `node`: an f32 conv2d, 3x3 filter, stride 1,
/// dilation 1, one group, f32 accumulation without tf32, within `options`'
/// bounds for its layout, at least one whole output tile each way.
bool winogradApplies(const ir::Node &node, const WinogradOptions &options);
/// "winograd": rewrites the convolutions winogradApplies to as Winograd
/// F(m x m, 3 x 3) from existing ops (a filter-transform matmul, an input
/// transform, one batched matmul, an output transform that takes the
/// convolution's epilogue). CPU pipelines run it under the fp32 policy.
std::unique_ptr<Pass> createWinogradPass(WinogradOptions options = {});
/// "kmajor": e4m3 matmuls read both operands with K contiguous: a B read
/// [K, N] becomes transpose(B) read with transpose_b (an A read transposed
/// likewise). GPU pipelines with e4m3 tensor cores run it under fp8.
std::unique_ptr<Pass> createKMajorOperandsPass();
/// A decompose pass limited to the named ops; an error names an unknown op or
/// one that has no decomposition.
Expected<std::unique_ptr<Pass>> createDecomposePass(std::span<const std::string_view> opNames);

} // namespace kiln::passes
