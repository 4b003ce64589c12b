// kiln.onnx.load: an ONNX model imported (frontend/onnx) into the same Graph the DSL builds.
#include "PyGraph.h"

#include "frontend/onnx/Import.h"

#include <pybind11/stl.h>

namespace py = pybind11;

namespace kiln::python {

void bindOnnx(py::module_ &module) {
  py::module_ m = module.def_submodule("onnx", "kiln's ONNX importer (use kiln.onnx)");
  m.def(
      "load",
      [](const std::string &path, std::map<std::string, std::vector<int64_t>> shapes,
         bool trainableParams, const std::string &name) {
        onnx::ImportOptions options;
        for (auto &[input, shape] : shapes)
          options.inputShapes.emplace(input, std::move(shape));
        options.trainableParams = trainableParams;
        options.graphName = name;
        auto graph = std::make_shared<PyGraph>();
        {
          std::optional<Expected<std::unique_ptr<Graph>>> imported;
          {
            py::gil_scoped_release release;
            imported.emplace(onnx::importModel(path, options));
          }
          graph->dsl = valueOrThrow(std::move(*imported));
        }
        return graph;
      },
      py::arg("path"), py::arg("shapes") = std::map<std::string, std::vector<int64_t>>{},
      py::arg("trainable_params") = false, py::arg("name") = "",
      "Imports the ONNX model at `path` as a Graph. `shapes` gives the shapes of inputs with "
      "dynamic dims, by ONNX input name; initializers become frozen parameters unless "
      "`trainable_params`.");
}

} // namespace kiln::python
