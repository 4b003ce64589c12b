// kiln.Error and the Python caller's location (see PythonErrors.h).
#include "PythonErrors.h"

#include <Python.h>
#include <frameobject.h>

namespace py = pybind11;

namespace kiln::python {
namespace {

/// The kiln package's directory: frames of files under it are the bindings' own
/// Python layers, not the user's code.
std::string &packageDirectory() {
  static std::string directory;
  return directory;
}

PyObject *errorType = nullptr;

std::string frameFile(PyFrameObject *frame) {
  PyCodeObject *code = PyFrame_GetCode(frame);
  PyObject *name = PyObject_GetAttrString(reinterpret_cast<PyObject *>(code), "co_filename");
  std::string file;
  if (name && PyUnicode_Check(name))
    file = PyUnicode_AsUTF8(name);
  Py_XDECREF(name);
  Py_DECREF(code);
  PyErr_Clear();
  return file;
}

bool insidePackage(const std::string &file) {
  const std::string &directory = packageDirectory();
  return !directory.empty() && file.starts_with(directory + "/");
}

/// The kiln.Error instance that carries `error`.
py::object errorObject(const Error &error) {
  py::object instance = py::handle(errorType)(error.str());
  instance.attr("code") = errorCodeName(error.code());
  instance.attr("message") = error.message();
  bool known = error.location() && error.location()->known();
  instance.attr("file") = known ? py::object(py::str(error.location()->file)) : py::none();
  instance.attr("line") = known ? py::object(py::int_(error.location()->line)) : py::none();
  py::list notes;
  for (const std::string &note : error.notes())
    notes.append(note);
  instance.attr("notes") = notes;
  return instance;
}

} // namespace

Location pythonCallerLocation() {
  PyFrameObject *frame = PyEval_GetFrame(); // borrowed
  Py_XINCREF(frame);
  Location location;
  while (frame) {
    std::string file = frameFile(frame);
    if (!insidePackage(file)) {
      location = Location{file, static_cast<unsigned>(PyFrame_GetLineNumber(frame)), 0};
      Py_DECREF(frame);
      break;
    }
    PyFrameObject *back = PyFrame_GetBack(frame); // a new reference
    Py_DECREF(frame);
    frame = back;
  }
  return location;
}

void bindErrors(py::module_ &module) {
  errorType = PyErr_NewExceptionWithDoc(
      "kiln.Error",
      "A kiln error: str() is the message with its location; .code names the kind "
      "(\"shape mismatch\", ...), .file and .line the Python (or IR) location, .notes the notes.",
      PyExc_Exception, nullptr);
  module.attr("Error") = py::handle(errorType);
  py::register_exception_translator([](std::exception_ptr pointer) {
    try {
      if (pointer)
        std::rethrow_exception(pointer);
    } catch (const KilnError &thrown) {
      // An error with no place of its own (a bad keyword, a failed compile or run) is
      // located at the user's line that made the call: the translator runs inside it.
      Error error = thrown.error;
      if (!error.location() || !error.location()->known())
        error.at(pythonCallerLocation());
      PyErr_SetObject(errorType, errorObject(error).ptr());
    }
  });
  module.def(
      "_error",
      [](const std::string &message) {
        return errorObject(Error(ErrorCode::InvalidArgument, message, pythonCallerLocation()));
      },
      py::arg("message"),
      "A kiln.Error (invalid argument) for the package's Python part to raise, located at the "
      "caller's line as the bindings' errors are.");
  module.def(
      "_set_package_dir", [](std::string directory) { packageDirectory() = std::move(directory); },
      "Names the kiln package's directory (called once by kiln/__init__.py).");
}

} // namespace kiln::python
