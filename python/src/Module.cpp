// kiln._kiln: the compiled half of the kiln Python package (docs/python.md). The package's
// Python files add keyword handling and the numpy/torch conversions on top.
#include "PyGraph.h"
#include "PythonErrors.h"
#include "TensorConversion.h"

#include "support/Version.h"

namespace py = pybind11;

namespace kiln::python {
void bindOps(py::module_ &module);
void bindCompile(py::module_ &module);
void bindNn(py::module_ &module);
void bindOnnx(py::module_ &module);
void bindSchedules(py::module_ &module);
void bindTuningDatabase(py::module_ &module);
void bindTraining(py::module_ &module);
} // namespace kiln::python

PYBIND11_MODULE(_kiln, module) {
  module.doc() = "kiln's C++ API, bound with pybind11 (use the kiln package, not this module)";
  module.attr("__version__") = std::string(kiln::kilnVersion());
  kiln::python::bindErrors(module);
  kiln::python::bindTensorConversion(module);
  kiln::python::bindGraph(module);
  kiln::python::bindOps(module);
  kiln::python::bindCompile(module);
  kiln::python::bindNn(module);
  kiln::python::bindOnnx(module);
  kiln::python::bindSchedules(module);
  kiln::python::bindTuningDatabase(module);
  kiln::python::bindTraining(module);
}
