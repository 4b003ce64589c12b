// The every-op graph: elementwise, reductions and windows, contractions and
// normalizations, data movement and leaves.
#include "EveryOpGraph.h"

namespace kiln::test {

void buildEveryOpGraph(CompileCase &c, int64_t batch) {
  Tensor x = c.input("x", {batch, 3, 9, 9});
  Tensor p = c.input("p", {batch, 3, 9, 9}, DType::F32, Values::positive());
  Tensor flag = c.input("flag", {9}, DType::Bool);
  Tensor ids = c.input("ids", {4}, DType::I64, Values::indices(9));

  // Elementwise.
  Tensor u = neg(abs(x)) + exp(x) - log(p) * sqrt(p) + rsqrt(p) + tanh(x) * sigmoid(x);
  u = relu(u) + gelu(x) + silu(x) + erf(x) + sin(x) * cos(x) + clamp(x, -1, 1);
  u = pow(p, x * 0.25) / maximum(p, 1.0) + minimum(x, u);
  Tensor compare = logicalOr(logicalAnd(eq(x, u), ne(x, p)), logicalNot(flag));
  compare = logicalOr(compare, logicalAnd(lt(x, u), le(p, u)));
  compare = logicalOr(compare, logicalAnd(gt(x, u), ge(p, u)));
  Tensor e = where(compare, cast(cast(u, DType::F16), DType::F32), x);
  c.output("elementwise", e);
  // The composite elementwise ops (decomposed before fusion).
  c.output("composite_elementwise", relu6(x) + hardSigmoid(x, 0.2, 0.4) + hardSwish(x) +
                                        softplus(x) * mish(x) + leakyRelu(x) - elu(x));

  // Reductions and windows.
  c.output("reduce_sum", reduceSum(e, {0, 2}));
  c.output("reduce_mean", reduceMean(e, {3}, true));
  // max has no identity: an empty axis is an error, so not the batch's then.
  c.output("reduce_max", reduceMax(e, {batch == 0 ? 1 : 0}));
  c.output("reduce_min", reduceMin(e, {-1}));
  c.output("reduce_prod", reduceProd(clamp(e, 0.5, 1.5), {2}));
  c.output("argmax", argmax(e, 2));
  c.output("argmin", argmin(e, 3, true));
  c.output("max_pool", maxPool2d(e));
  c.output("avg_pool", avgPool2d(e, {.kernel = {3, 3}, .stride = {2, 2}}));
  c.output("global_avg_pool", globalAvgPool(e));

  // Contractions and normalizations.
  Tensor w = c.param("w", {4, 3, 3, 3});
  Tensor conv = conv2d(e, w);
  Tensor m = c.param("m", {9, 5});
  Tensor mm = matmul(e, m);
  c.output("conv_softmax", softmax(conv, 1));
  c.output("matmul_log_softmax", logSoftmax(mm));
  Tensor g = c.param("g", {5}), b = c.param("b", {5});
  c.output("layer_norm", layerNorm(mm, g, b));
  Tensor bnScale = c.param("bn_scale", {4}), bnBias = c.param("bn_bias", {4});
  Tensor bnMean = c.param("bn_mean", {4});
  Tensor bnVar = c.param("bn_var", {4}, DType::F32, Values::positive());
  c.output("batch_norm", batchNorm(conv, bnScale, bnBias, bnMean, bnVar));
  Tensor q = reshape(e, {batch * 3, 9, 9});
  c.output("attention", scaledDotProductAttention(q, q, transpose(q, {0, 2, 1}), true));

  // Data movement and leaves.
  // The first batch row broadcast back to the batch (an empty batch has no
  // first row: a parameter row is broadcast to no rows).
  Tensor first = batch == 0 ? c.param("row", {1, 3, 9, 9}) : slice(e, {0, 0, 0, 0}, {1, 3, 9, 9});
  Tensor moved = broadcastTo(unsqueeze(squeeze(first, {0}), {0}), {batch, 3, 9, 9});
  moved = concat({moved, pad(slice(e, {0, 0, 1, 0}, {batch, 3, 9, 9}), {0, 0, 1, 0}, {0, 0, 0, 0})},
                 1);
  c.output("movement", moved);
  c.output("gather", gather(e, ids, 3));
  Tensor along = c.input("along", {batch, 3, 9, 2}, DType::I32, Values::indices(9));
  c.output("take_along_axis", takeAlongAxis(e, along, 3));
  c.output("iota_constant", iota(c.graph(), {3, 4}, 1, DType::F32) +
                                constant(c.graph(), HostTensor::fromDoubles(
                                                        DType::F32, {4}, std::vector<double>{
                                                                             1, 2, 3, 4})));
  // A size's value (in a static graph, a constant one: SymbolicCompileTest runs symbols).
  c.output("symbol_size",
           e * c.graph().apply(
                   ir::OpKind::SymbolSize, {},
                   {{"dtype", DType::F32}, {"size", std::vector<ir::SizeExpr>{ir::SizeExpr(7)}}},
                   std::source_location::current()));
  // A collective: with no communicator the compiled model's all_reduce step is a copy.
  c.output("all_reduce", c.graph().apply(ir::OpKind::AllReduce, {e * 2.0},
                                         {{"op", std::string("mean")}},
                                         std::source_location::current()));
}

} // namespace kiln::test
