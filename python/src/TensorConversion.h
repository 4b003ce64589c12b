// Tensors crossing between kiln and Python: kiln's HostTensors go out as HostBuffers that
// numpy (buffer protocol) and torch (DLPack capsules) view without a copy; what comes in is
// TensorBorrowing.h's. Also the dtype tables both directions share.
#pragma once

#include "support/HostTensor.h"

#include <dlpack/dlpack.h>
#include <pybind11/pybind11.h>

#include <memory>
#include <optional>
#include <string>

namespace kiln::python {

/// A HostTensor handed to Python. It implements __dlpack__ and __dlpack_device__, so
/// numpy.from_dlpack and torch.from_dlpack view its memory in place; the views keep it alive.
/// The tensor may borrow a caller's memory (an input, TensorBorrowing.h): numpy then views it
/// read-only, and a DLPack export (which cannot say read-only) makes the buffer copy it first.
struct HostBuffer {
  HostTensor tensor;
};

/// The dtype named `name` ("f32", "bf16", ...); a kiln.Error listing the dtypes otherwise.
DType dtypeNamed(const std::string &name);
/// "f64, f32, ...": every kiln dtype, for errors.
std::string dtypeList();
/// kiln's dtype of a DLPack type; nullopt when kiln has none (bool arrives as DLPack 0.8's
/// bool only: DLPack 0.6's u8 is ambiguous and needs an override).
std::optional<DType> dtypeOfDlpack(DLDataType type);

/// Tensors by name as a dict of HostBuffers, moved in: Python sees this memory itself.
pybind11::dict buffersOf(NamedTensors tensors);
/// A dict of HostBuffers by name as NamedTensors that borrow the buffers' memory (no copy),
/// keeping the buffers alive.
NamedTensors namedTensorsOf(const pybind11::dict &buffers);

/// Registers HostBuffer as kiln._kiln.HostBuffer.
void bindTensorConversion(pybind11::module_ &module);

} // namespace kiln::python
