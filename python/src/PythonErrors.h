// kiln errors as Python exceptions (kiln.Error), and the Python line a DSL call came from.
#pragma once

#include "support/Error.h"

#include <pybind11/pybind11.h>

#include <string>

namespace kiln::python {

/// Thrown by the bindings; translated into a kiln.Error carrying the message, the
/// error code's name and the location.
struct KilnError {
  Error error;
};

/// Returns `expected`'s value or throws its error as a KilnError.
template <typename T> T valueOrThrow(Expected<T> expected) {
  if (!expected)
    throw KilnError{std::move(expected).error()};
  if constexpr (!std::is_void_v<T>)
    return std::move(*expected);
}

/// The innermost Python frame outside the kiln package: the user's line that called into
/// kiln (through kiln.nn's Python layers too). An unknown location when there is none.
Location pythonCallerLocation();

/// Registers kiln.Error and its translator, and the function the package's __init__.py
/// calls to name its own directory (whose frames pythonCallerLocation skips).
void bindErrors(pybind11::module_ &module);

} // namespace kiln::python
