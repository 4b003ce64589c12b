// Tensors crossing between kiln and Python: kiln's HostTensors go out as DLPack capsules
// (numpy and torch take their memory without a copy), numpy arrays and DLPack capsules come
// in as HostTensors (a copy: a HostTensor owns its bytes).
#pragma once

#include "support/HostTensor.h"

#include <pybind11/pybind11.h>

#include <memory>
#include <optional>
#include <string>

namespace kiln::python {

/// A HostTensor handed to Python. It implements __dlpack__ and __dlpack_device__, so
/// numpy.from_dlpack and torch.from_dlpack view its memory in place; the views keep it alive.
struct HostBuffer {
  HostTensor tensor;
};

/// The dtype named `name` ("f32", "bf16", ...); a kiln.Error listing the dtypes otherwise.
DType dtypeNamed(const std::string &name);

/// A copy of a numpy array (anything numpy.asarray accepts, made C-contiguous). `what`
/// names the tensor in errors ("input 'x'").
HostTensor hostTensorFromNumpy(const pybind11::handle &array, const std::string &what);

/// A copy of the tensor behind a legacy DLPack capsule ("dltensor", as
/// torch.utils.dlpack.to_dlpack makes), which it consumes. Host memory only, any strides.
/// `dtype` overrides the capsule's type of the same size (torch's bool travels as u8).
HostTensor hostTensorFromDlpack(const pybind11::capsule &capsule, std::optional<DType> dtype,
                                const std::string &what);

/// Tensors by name as a dict of HostBuffers, moved in: Python sees this memory itself.
pybind11::dict buffersOf(NamedTensors tensors);
/// A dict of HostBuffers by name as NamedTensors (copies: a run takes HostTensors).
NamedTensors namedTensorsOf(const pybind11::dict &buffers);

/// Registers HostBuffer as kiln._kiln.HostBuffer.
void bindTensorConversion(pybind11::module_ &module);

} // namespace kiln::python
