// The DSL's activations that are compositions of kiln's elementwise ops (Ops.h).
#include "frontend/Ops.h"

#include <limits>

namespace kiln {

Tensor relu6(Tensor x, std::source_location loc) { return clamp(x, 0.0, 6.0, loc); }

Tensor hardSigmoid(Tensor x, double alpha, double beta, std::source_location loc) {
  return clamp(add(mul(x, scalarLike(x, alpha, loc), loc), scalarLike(x, beta, loc), loc), 0.0,
               1.0, loc);
}

Tensor hardSwish(Tensor x, std::source_location loc) {
  return mul(x, hardSigmoid(x, 1.0 / 6.0, 0.5, loc), loc);
}

Tensor softplus(Tensor x, double beta, double threshold, std::source_location loc) {
  Tensor scaled = beta == 1.0 ? x : mul(x, scalarLike(x, beta, loc), loc);
  Tensor smooth = add(relu(scaled, loc),
                      log(add(scalarLike(x, 1.0, loc), exp(neg(abs(scaled, loc), loc), loc), loc),
                          loc),
                      loc);
  if (beta != 1.0)
    smooth = div(smooth, scalarLike(x, beta, loc), loc);
  if (threshold == std::numeric_limits<double>::infinity())
    return smooth;
  return where(gt(scaled, scalarLike(x, threshold, loc), loc), x, smooth, loc);
}

Tensor mish(Tensor x, std::source_location loc) {
  return mul(x, tanh(softplus(x, 1.0, 20.0, loc), loc), loc);
}

Tensor leakyRelu(Tensor x, double slope, std::source_location loc) {
  return where(lt(x, scalarLike(x, 0.0, loc), loc), mul(x, scalarLike(x, slope, loc), loc), x,
               loc);
}

Tensor elu(Tensor x, double alpha, std::source_location loc) {
  Tensor negative = mul(sub(exp(x, loc), scalarLike(x, 1.0, loc), loc),
                        scalarLike(x, alpha, loc), loc);
  return where(gt(x, scalarLike(x, 0.0, loc), loc), x, negative, loc);
}

} // namespace kiln
