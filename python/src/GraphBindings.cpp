// kiln.Graph, kiln.Tensor and its operators, parse_ir, graph.ir(), evaluate.
#include "PyGraph.h"
#include "TensorConversion.h"

#include "frontend/Evaluate.h"
#include "frontend/Ops.h"
#include "ir/graph/Interpreter.h"
#include "ir/graph/Parser.h"
#include "ir/graph/Printer.h"
#include "ir/graph/Verifier.h"

#include <fmt/format.h>
#include <pybind11/stl.h>

namespace py = pybind11;

namespace kiln::python {

Graph &PyGraph::builder() {
  if (!dsl)
    throw KilnError{Error(ErrorCode::Unsupported,
                          "a graph parsed from IR text cannot be extended with the DSL",
                          pythonCallerLocation())};
  return *dsl;
}

Expected<void> PyGraph::finalize() const {
  if (firstError)
    return std::unexpected(*firstError);
  if (dsl)
    return dsl->finalize();
  return ir::verifyGraph(*parsed);
}

void PyGraph::throwDslError(size_t errorsBefore) {
  Error error = errorsBefore == 0 && dsl->error()
                    ? *dsl->error()
                    : Error(ErrorCode::InvalidArgument,
                            "this call failed after an earlier error poisoned the graph: " +
                                (firstError ? firstError->str() : dsl->error()->str()));
  if (Location where = pythonCallerLocation(); where.known())
    error.at(where);
  if (!firstError)
    firstError = error;
  throw KilnError{std::move(error)};
}

namespace {

py::tuple shapeTuple(const Shape &shape) { return py::tuple(py::cast(shape)); }

/// `op` on (Tensor, Tensor), (Tensor, number) and, as `reflected`, (number, Tensor).
template <typename Op>
void bindBinaryOperator(py::class_<PyTensor> &cls, const char *name, const char *reflected, Op op) {
  cls.def(name, [op](const PyTensor &a, const PyTensor &b) {
    return buildOn(
        a.graph, [&](Graph &) { return op(LocatedTensor(a.tensor, kNoSourceLocation), b.tensor); });
  });
  cls.def(name, [op](const PyTensor &a, double b) {
    return buildOn(a.graph,
                   [&](Graph &) { return op(LocatedTensor(a.tensor, kNoSourceLocation), b); });
  });
  if (reflected)
    cls.def(reflected, [op](const PyTensor &b, double a) {
      return buildOn(b.graph,
                     [&](Graph &) { return op(a, LocatedTensor(b.tensor, kNoSourceLocation)); });
    });
}

} // namespace

void bindGraph(py::module_ &module) {
  py::class_<PyGraph, GraphHandle>(module, "Graph",
                                   "A model being built with the DSL (or parsed from IR text).")
      .def(py::init([](std::string name, uint64_t seed) {
             auto graph = std::make_shared<PyGraph>();
             graph->dsl = std::make_unique<Graph>(std::move(name), seed);
             return graph;
           }),
           py::arg("name") = "main", py::arg("seed") = 0,
           "`seed` drives every parameter initializer.")
      .def_property_readonly("name", [](const PyGraph &g) { return g.ir().name(); })
      .def(
          "input",
          [](const GraphHandle &g, std::string name, std::vector<int64_t> shape,
             const std::string &dtype) {
            DType type = dtypeNamed(dtype);
            return buildOn(g, [&](Graph &b) {
              return b.input(std::move(name), shape, type, kNoSourceLocation);
            });
          },
          py::arg("name"), py::arg("shape"), py::arg("dtype") = "f32",
          "A graph input, bound by name when the model runs.")
      .def(
          "param",
          [](const GraphHandle &g, std::string name, const HostBuffer &value, bool trainable) {
            return buildOn(g, [&](Graph &b) {
              return b.param(std::move(name), value.tensor, trainable, kNoSourceLocation);
            });
          },
          py::arg("name"), py::arg("value"), py::arg("trainable") = true)
      .def(
          "output",
          [](const GraphHandle &g, std::string name, const PyTensor &value) {
            buildOn(g, [&](Graph &b) {
              b.output(std::move(name), value.tensor, kNoSourceLocation);
              return value.tensor;
            });
          },
          py::arg("name"), py::arg("value"), "Marks `value` as the output `name`.")
      .def(
          "ir", [](const PyGraph &g) { return ir::printGraph(g.ir()); },
          "The graph IR as text (kiln.parse_ir reads it back).")
      .def(
          "_param_buffers",
          [](const PyGraph &g) {
            return g.dsl ? buffersOf(NamedTensors(g.dsl->paramValues())) : py::dict();
          },
          "Every parameter's value by full name, as HostBuffers (copies).")
      .def(
          "_evaluate",
          [](const PyGraph &g, const py::dict &inputs) {
            valueOrThrow(g.finalize());
            NamedTensors tensors = namedTensorsOf(inputs);
            NamedTensors outputs = g.dsl ? valueOrThrow(evaluate(*g.dsl, tensors))
                                         : valueOrThrow(ir::interpret(g.ir(), tensors));
            return buffersOf(std::move(outputs));
          },
          "Runs the reference interpreter: inputs (and, for a parsed graph, parameters) by name.")
      .def(
          "_check", [](const PyGraph &g) { valueOrThrow(g.finalize()); },
          "Raises the graph's first error, if any.");

  module.def(
      "parse_ir",
      [](const std::string &text) {
        auto graph = std::make_shared<PyGraph>();
        graph->parsed = valueOrThrow(ir::parseGraph(text));
        return graph;
      },
      py::arg("text"), "Parses graph IR text (as graph.ir() prints it) into a Graph.");

  py::class_<PyTensor> tensor(module, "Tensor", "A value of a Graph, with Python operators.");
  tensor
      .def_property_readonly("shape",
                             [](const PyTensor &t) { return shapeTuple(t.tensor.shape()); })
      .def_property_readonly(
          "dtype", [](const PyTensor &t) { return std::string(dtypeName(t.tensor.dtype())); })
      .def_property_readonly("rank", [](const PyTensor &t) { return t.tensor.rank(); })
      .def_property_readonly(
          "name", [](const PyTensor &t) { return t.tensor.value()->name(); },
          "The value's name: an input's or parameter's; empty for a node result.")
      .def_property_readonly("graph", [](const PyTensor &t) { return t.graph; })
      .def("__repr__", [](const PyTensor &t) { return "<kiln.Tensor " + t.tensor.str() + ">"; });
  bindBinaryOperator(tensor, "__add__", "__radd__", [](auto a, auto b) { return a + b; });
  bindBinaryOperator(tensor, "__sub__", "__rsub__", [](auto a, auto b) { return a - b; });
  bindBinaryOperator(tensor, "__mul__", "__rmul__", [](auto a, auto b) { return a * b; });
  bindBinaryOperator(tensor, "__truediv__", "__rtruediv__", [](auto a, auto b) { return a / b; });
  // Python reflects a comparison with a scalar on the left to the mirrored operator.
  bindBinaryOperator(tensor, "__lt__", nullptr, [](auto a, auto b) { return a < b; });
  bindBinaryOperator(tensor, "__le__", nullptr, [](auto a, auto b) { return a <= b; });
  bindBinaryOperator(tensor, "__gt__", nullptr, [](auto a, auto b) { return a > b; });
  bindBinaryOperator(tensor, "__ge__", nullptr, [](auto a, auto b) { return a >= b; });
  tensor.def("__neg__", [](const PyTensor &x) {
    return buildOn(x.graph, [&](Graph &) { return -LocatedTensor(x.tensor, kNoSourceLocation); });
  });
  tensor.def("__matmul__", [](const PyTensor &a, const PyTensor &b) {
    return buildOn(a.graph,
                   [&](Graph &) { return matmul(a.tensor, b.tensor, {}, kNoSourceLocation); });
  });
}

} // namespace kiln::python
