// The op functions of frontend/Ops.h as kiln.<snake_case_name>, with Python keywords for
// their options. Each builds its node through buildOn, so a failure is a kiln.Error at the
// caller's Python line.
#include "Arguments.h"
#include "PyGraph.h"
#include "TensorConversion.h"

#include "frontend/Ops.h"

#include <fmt/format.h>
#include <pybind11/stl.h>

namespace py = pybind11;

namespace kiln::python {
namespace {

using UnaryOp = Tensor (*)(Tensor, std::source_location);
using BinaryOp = Tensor (*)(Tensor, Tensor, std::source_location);
using ScalarOp = Tensor (*)(Tensor, double, std::source_location);

/// Ops of one tensor and no options, by their Python names.
const std::pair<const char *, UnaryOp> kUnaryOps[] = {
    {"neg", neg},     {"abs", abs},
    {"exp", exp},     {"log", log},
    {"sqrt", sqrt},   {"rsqrt", rsqrt},
    {"tanh", tanh},   {"sigmoid", sigmoid},
    {"relu", relu},   {"silu", silu},
    {"erf", erf},     {"sin", sin},
    {"cos", cos},     {"logical_not", logicalNot},
    {"relu6", relu6}, {"hard_swish", hardSwish},
    {"mish", mish},
};

/// Elementwise ops of two broadcast tensors, by their Python names.
const std::pair<const char *, BinaryOp> kBinaryOps[] = {
    {"add", add},
    {"sub", sub},
    {"mul", mul},
    {"div", div},
    {"lt", lt},
    {"le", le},
    {"gt", gt},
    {"ge", ge},
    {"logical_and", logicalAnd},
    {"logical_or", logicalOr},
};

/// Binary ops whose second operand may also be a Python number.
struct TensorOrScalarOp {
  const char *name;
  BinaryOp withTensor;
  ScalarOp withScalar;
};
const TensorOrScalarOp kTensorOrScalarOps[] = {
    {"pow", pow, pow}, {"maximum", maximum, maximum}, {"minimum", minimum, minimum}, {"eq", eq, eq},
    {"ne", ne, ne},
};

std::vector<Tensor> tensorsOf(const std::vector<PyTensor> &tensors) {
  std::vector<Tensor> out;
  for (const PyTensor &tensor : tensors)
    out.push_back(tensor.tensor);
  return out;
}

GeluApproximation geluApproximationNamed(const std::string &name) {
  if (name == "none")
    return GeluApproximation::None;
  if (name == "tanh")
    return GeluApproximation::Tanh;
  throw KilnError{Error(ErrorCode::InvalidArgument,
                        fmt::format("unknown gelu approximation '{}' (use 'none' or 'tanh')", name),
                        pythonCallerLocation())};
}

void bindReductions(py::module_ &m) {
  using Reduction = Tensor (*)(Tensor, std::vector<int64_t>, bool, std::source_location);
  const std::pair<const char *, Reduction> reductions[] = {{"reduce_sum", reduceSum},
                                                           {"reduce_mean", reduceMean},
                                                           {"reduce_max", reduceMax},
                                                           {"reduce_min", reduceMin},
                                                           {"reduce_prod", reduceProd}};
  for (auto [name, op] : reductions)
    m.def(
        name,
        [op](const PyTensor &x, std::vector<int64_t> axes, bool keepdims) {
          return buildOn(x.graph,
                         [&](Graph &) { return op(x.tensor, axes, keepdims, kNoSourceLocation); });
        },
        py::arg("x"), py::arg("axes"), py::arg("keepdims") = false);
  using ArgReduction = Tensor (*)(Tensor, int64_t, bool, std::source_location);
  const std::pair<const char *, ArgReduction> argReductions[] = {{"argmax", argmax},
                                                                 {"argmin", argmin}};
  for (auto [name, op] : argReductions)
    m.def(
        name,
        [op](const PyTensor &x, int64_t axis, bool keepdims) {
          return buildOn(x.graph,
                         [&](Graph &) { return op(x.tensor, axis, keepdims, kNoSourceLocation); });
        },
        py::arg("x"), py::arg("axis"), py::arg("keepdims") = false);
}

void bindContractionsAndWindows(py::module_ &m) {
  m.def(
      "matmul",
      [](const PyTensor &a, const PyTensor &b, bool transposeA, bool transposeB,
         std::optional<std::string> accumulate, bool allowTf32) {
        MatMulOptions options{transposeA, transposeB, optionalDtype(accumulate), allowTf32};
        return buildOn(a.graph, [&](Graph &) {
          return matmul(a.tensor, b.tensor, options, kNoSourceLocation);
        });
      },
      py::arg("a"), py::arg("b"), py::arg("transpose_a") = false, py::arg("transpose_b") = false,
      py::arg("accumulate") = py::none(), py::arg("allow_tf32") = false);
  m.def(
      "conv2d",
      [](const PyTensor &x, const PyTensor &filter, py::object stride, py::object padding,
         py::object dilation, int64_t groups, const std::string &layout,
         std::optional<std::string> accumulate, bool allowTf32) {
        Conv2DOptions options;
        options.stride = pairOf(stride);
        options.padding = paddingOf(padding);
        options.dilation = pairOf(dilation);
        options.groups = groups;
        options.layout = layoutNamed(layout);
        options.accumulate = optionalDtype(accumulate);
        options.allowTf32 = allowTf32;
        return buildOn(x.graph, [&](Graph &) {
          return conv2d(x.tensor, filter.tensor, options, kNoSourceLocation);
        });
      },
      py::arg("x"), py::arg("filter"), py::arg("stride") = 1, py::arg("padding") = "valid",
      py::arg("dilation") = 1, py::arg("groups") = 1, py::arg("layout") = "nchw",
      py::arg("accumulate") = py::none(), py::arg("allow_tf32") = false);
  auto poolOptions = [](py::object kernel, py::object stride, py::object padding,
                        const std::string &layout, bool countIncludePad, bool ceilMode) {
    Pool2DOptions options;
    options.kernel = pairOf(kernel);
    options.stride = stride.is_none() ? std::array<int64_t, 2>{0, 0} : pairOf(stride);
    options.padding = paddingOf(padding);
    options.layout = layoutNamed(layout);
    options.countIncludePad = countIncludePad;
    options.ceilMode = ceilMode;
    return options;
  };
  m.def(
      "max_pool2d",
      [poolOptions](const PyTensor &x, py::object kernel, py::object stride, py::object padding,
                    const std::string &layout, bool ceilMode) {
        Pool2DOptions options = poolOptions(kernel, stride, padding, layout, true, ceilMode);
        return buildOn(x.graph,
                       [&](Graph &) { return maxPool2d(x.tensor, options, kNoSourceLocation); });
      },
      py::arg("x"), py::arg("kernel") = 2, py::arg("stride") = py::none(),
      py::arg("padding") = "valid", py::arg("layout") = "nchw", py::arg("ceil_mode") = false);
  m.def(
      "avg_pool2d",
      [poolOptions](const PyTensor &x, py::object kernel, py::object stride, py::object padding,
                    const std::string &layout, bool countIncludePad, bool ceilMode) {
        Pool2DOptions options =
            poolOptions(kernel, stride, padding, layout, countIncludePad, ceilMode);
        return buildOn(x.graph,
                       [&](Graph &) { return avgPool2d(x.tensor, options, kNoSourceLocation); });
      },
      py::arg("x"), py::arg("kernel") = 2, py::arg("stride") = py::none(),
      py::arg("padding") = "valid", py::arg("layout") = "nchw", py::arg("count_include_pad") = true,
      py::arg("ceil_mode") = false);
  m.def(
      "global_avg_pool",
      [](const PyTensor &x, const std::string &layout) {
        Layout chosen = layoutNamed(layout);
        return buildOn(x.graph,
                       [&](Graph &) { return globalAvgPool(x.tensor, chosen, kNoSourceLocation); });
      },
      py::arg("x"), py::arg("layout") = "nchw");
}

void bindNormalizations(py::module_ &m) {
  m.def(
      "softmax",
      [](const PyTensor &x, int64_t axis) {
        return buildOn(x.graph,
                       [&](Graph &) { return softmax(x.tensor, axis, kNoSourceLocation); });
      },
      py::arg("x"), py::arg("axis") = -1);
  m.def(
      "log_softmax",
      [](const PyTensor &x, int64_t axis) {
        return buildOn(x.graph,
                       [&](Graph &) { return logSoftmax(x.tensor, axis, kNoSourceLocation); });
      },
      py::arg("x"), py::arg("axis") = -1);
  m.def(
      "layer_norm",
      [](const PyTensor &x, const PyTensor &scale, const PyTensor &bias, int64_t axis,
         double epsilon) {
        return buildOn(x.graph, [&](Graph &) {
          return layerNorm(x.tensor, scale.tensor, bias.tensor, axis, epsilon, kNoSourceLocation);
        });
      },
      py::arg("x"), py::arg("scale"), py::arg("bias"), py::arg("axis") = -1,
      py::arg("epsilon") = 1e-5);
  m.def(
      "batch_norm",
      [](const PyTensor &x, const PyTensor &scale, const PyTensor &bias, const PyTensor &mean,
         const PyTensor &var, int64_t axis, double epsilon) {
        return buildOn(x.graph, [&](Graph &) {
          return batchNorm(x.tensor, scale.tensor, bias.tensor, mean.tensor, var.tensor, axis,
                           epsilon, kNoSourceLocation);
        });
      },
      py::arg("x"), py::arg("scale"), py::arg("bias"), py::arg("mean"), py::arg("var"),
      py::arg("axis") = 1, py::arg("epsilon") = 1e-5);
  m.def(
      "scaled_dot_product_attention",
      [](const PyTensor &q, const PyTensor &k, const PyTensor &v, std::optional<PyTensor> mask,
         bool causal, std::optional<double> scale) {
        return buildOn(q.graph, [&](Graph &) {
          return mask ? scaledDotProductAttention(q.tensor, k.tensor, v.tensor, mask->tensor,
                                                  causal, scale, kNoSourceLocation)
                      : scaledDotProductAttention(q.tensor, k.tensor, v.tensor, causal, scale,
                                                  kNoSourceLocation);
        });
      },
      py::arg("q"), py::arg("k"), py::arg("v"), py::arg("mask") = py::none(),
      py::arg("causal") = false, py::arg("scale") = py::none());
}

void bindDataMovement(py::module_ &m) {
  m.def(
      "reshape",
      [](const PyTensor &x, std::vector<int64_t> shape) {
        return buildOn(x.graph,
                       [&](Graph &) { return reshape(x.tensor, shape, kNoSourceLocation); });
      },
      py::arg("x"), py::arg("shape"));
  m.def(
      "flatten",
      [](const PyTensor &x, int64_t startAxis) {
        return buildOn(x.graph,
                       [&](Graph &) { return flatten(x.tensor, startAxis, kNoSourceLocation); });
      },
      py::arg("x"), py::arg("start_axis") = 1);
  m.def(
      "transpose",
      [](const PyTensor &x, std::vector<int64_t> perm) {
        return buildOn(x.graph,
                       [&](Graph &) { return transpose(x.tensor, perm, kNoSourceLocation); });
      },
      py::arg("x"), py::arg("perm"));
  m.def(
      "broadcast_to",
      [](const PyTensor &x, std::vector<int64_t> shape) {
        return buildOn(x.graph,
                       [&](Graph &) { return broadcastTo(x.tensor, shape, kNoSourceLocation); });
      },
      py::arg("x"), py::arg("shape"));
  m.def(
      "slice",
      [](const PyTensor &x, std::vector<int64_t> starts, std::vector<int64_t> stops,
         std::vector<int64_t> steps) {
        return buildOn(x.graph, [&](Graph &) {
          return slice(x.tensor, starts, stops, steps, kNoSourceLocation);
        });
      },
      py::arg("x"), py::arg("starts"), py::arg("stops"), py::arg("steps") = std::vector<int64_t>{});
  m.def(
      "slice_axis",
      [](const PyTensor &x, int64_t axis, int64_t start, int64_t stop, int64_t step) {
        return buildOn(x.graph, [&](Graph &) {
          return sliceAxis(x.tensor, axis, start, stop, step, kNoSourceLocation);
        });
      },
      py::arg("x"), py::arg("axis"), py::arg("start"), py::arg("stop"), py::arg("step") = 1);
  m.def(
      "concat",
      [](const std::vector<PyTensor> &xs, int64_t axis) {
        if (xs.empty())
          throw KilnError{
              Error(ErrorCode::InvalidArgument, "concat of no tensors", pythonCallerLocation())};
        std::vector<Tensor> tensors = tensorsOf(xs);
        return buildOn(xs.front().graph, [&](Graph &) {
          return concat(std::span<const Tensor>(tensors), axis, kNoSourceLocation);
        });
      },
      py::arg("xs"), py::arg("axis"));
  m.def(
      "pad",
      [](const PyTensor &x, std::vector<int64_t> low, std::vector<int64_t> high, double value) {
        return buildOn(x.graph,
                       [&](Graph &) { return pad(x.tensor, low, high, value, kNoSourceLocation); });
      },
      py::arg("x"), py::arg("low"), py::arg("high"), py::arg("value") = 0.0);
  m.def(
      "gather",
      [](const PyTensor &data, const PyTensor &indices, int64_t axis) {
        return buildOn(data.graph, [&](Graph &) {
          return gather(data.tensor, indices.tensor, axis, kNoSourceLocation);
        });
      },
      py::arg("data"), py::arg("indices"), py::arg("axis") = 0);
  m.def(
      "take_along_axis",
      [](const PyTensor &data, const PyTensor &indices, int64_t axis) {
        return buildOn(data.graph, [&](Graph &) {
          return takeAlongAxis(data.tensor, indices.tensor, axis, kNoSourceLocation);
        });
      },
      py::arg("data"), py::arg("indices"), py::arg("axis"));
  m.def(
      "squeeze",
      [](const PyTensor &x, std::vector<int64_t> axes) {
        return buildOn(x.graph,
                       [&](Graph &) { return squeeze(x.tensor, axes, kNoSourceLocation); });
      },
      py::arg("x"), py::arg("axes"));
  m.def(
      "unsqueeze",
      [](const PyTensor &x, std::vector<int64_t> axes) {
        return buildOn(x.graph,
                       [&](Graph &) { return unsqueeze(x.tensor, axes, kNoSourceLocation); });
      },
      py::arg("x"), py::arg("axes"));
}

void bindLeaves(py::module_ &m) {
  m.def(
      "iota",
      [](const GraphHandle &graph, std::vector<int64_t> shape, int64_t axis,
         const std::string &dtype) {
        DType type = dtypeNamed(dtype);
        return buildOn(graph,
                       [&](Graph &g) { return iota(g, shape, axis, type, kNoSourceLocation); });
      },
      py::arg("graph"), py::arg("shape"), py::arg("axis"), py::arg("dtype") = "i64");
  m.def(
      "_constant_of",
      [](const GraphHandle &graph, const HostBuffer &value) {
        return buildOn(graph,
                       [&](Graph &g) { return constant(g, value.tensor, kNoSourceLocation); });
      },
      "A literal copy of a HostBuffer (kiln.constant converts arrays).");
  m.def(
      "_constant_splat",
      [](const GraphHandle &graph, double value, std::vector<int64_t> shape,
         const std::string &dtype) {
        DType type = dtypeNamed(dtype);
        return buildOn(
            graph, [&](Graph &g) { return constant(g, value, shape, type, kNoSourceLocation); });
      },
      "`value` splatted over `shape` (kiln.constant with a number).");
  m.def(
      "scalar_like",
      [](const PyTensor &like, double value) {
        return buildOn(like.graph,
                       [&](Graph &) { return scalarLike(like.tensor, value, kNoSourceLocation); });
      },
      py::arg("like"), py::arg("value"));
}

} // namespace

void bindOps(py::module_ &m) {
  for (auto [name, op] : kUnaryOps)
    m.def(
        name,
        [op](const PyTensor &x) {
          return buildOn(x.graph, [&](Graph &) { return op(x.tensor, kNoSourceLocation); });
        },
        py::arg("x"));
  for (auto [name, op] : kBinaryOps)
    m.def(
        name,
        [op](const PyTensor &a, const PyTensor &b) {
          return buildOn(a.graph,
                         [&](Graph &) { return op(a.tensor, b.tensor, kNoSourceLocation); });
        },
        py::arg("a"), py::arg("b"));
  for (const TensorOrScalarOp &op : kTensorOrScalarOps) {
    m.def(
        op.name,
        [withTensor = op.withTensor](const PyTensor &a, const PyTensor &b) {
          return buildOn(
              a.graph, [&](Graph &) { return withTensor(a.tensor, b.tensor, kNoSourceLocation); });
        },
        py::arg("a"), py::arg("b"));
    m.def(
        op.name,
        [withScalar = op.withScalar](const PyTensor &a, double b) {
          return buildOn(a.graph,
                         [&](Graph &) { return withScalar(a.tensor, b, kNoSourceLocation); });
        },
        py::arg("a"), py::arg("b"));
  }
  m.def(
      "where",
      [](const PyTensor &cond, const PyTensor &a, const PyTensor &b) {
        return buildOn(cond.graph, [&](Graph &) {
          return where(cond.tensor, a.tensor, b.tensor, kNoSourceLocation);
        });
      },
      py::arg("cond"), py::arg("a"), py::arg("b"));
  m.def(
      "cast",
      [](const PyTensor &x, const std::string &dtype) {
        DType type = dtypeNamed(dtype);
        return buildOn(x.graph, [&](Graph &) { return cast(x.tensor, type, kNoSourceLocation); });
      },
      py::arg("x"), py::arg("dtype"));
  m.def(
      "clamp",
      [](const PyTensor &x, double min, double max) {
        return buildOn(x.graph,
                       [&](Graph &) { return clamp(x.tensor, min, max, kNoSourceLocation); });
      },
      py::arg("x"), py::arg("min"), py::arg("max"));
  m.def(
      "gelu",
      [](const PyTensor &x, const std::string &approximate) {
        GeluApproximation approximation = geluApproximationNamed(approximate);
        return buildOn(x.graph,
                       [&](Graph &) { return gelu(x.tensor, approximation, kNoSourceLocation); });
      },
      py::arg("x"), py::arg("approximate") = "none");
  m.def(
      "hard_sigmoid",
      [](const PyTensor &x, double alpha, double beta) {
        return buildOn(x.graph, [&](Graph &) {
          return hardSigmoid(x.tensor, alpha, beta, kNoSourceLocation);
        });
      },
      py::arg("x"), py::arg("alpha") = 1.0 / 6.0, py::arg("beta") = 0.5);
  m.def(
      "softplus",
      [](const PyTensor &x, double beta, double threshold) {
        return buildOn(x.graph, [&](Graph &) {
          return softplus(x.tensor, beta, threshold, kNoSourceLocation);
        });
      },
      py::arg("x"), py::arg("beta") = 1.0, py::arg("threshold") = 20.0);
  m.def(
      "leaky_relu",
      [](const PyTensor &x, double slope) {
        return buildOn(x.graph,
                       [&](Graph &) { return leakyRelu(x.tensor, slope, kNoSourceLocation); });
      },
      py::arg("x"), py::arg("slope") = 0.01);
  m.def(
      "elu",
      [](const PyTensor &x, double alpha) {
        return buildOn(x.graph, [&](Graph &) { return elu(x.tensor, alpha, kNoSourceLocation); });
      },
      py::arg("x"), py::arg("alpha") = 1.0);
  bindReductions(m);
  bindContractionsAndWindows(m);
  bindNormalizations(m);
  bindDataMovement(m);
  bindLeaves(m);
}

} // namespace kiln::python
