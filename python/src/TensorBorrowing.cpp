// numpy arrays and DLPack tensors into HostBuffers: borrowed where kernels can read them in
// place, else copied once (see TensorBorrowing.h).
#include "TensorBorrowing.h"

#include "Arguments.h"
#include "PythonErrors.h"

#include "runtime/RunOptions.h"
#include "support/ShapeLimits.h"

#include <dlpack/dlpack.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstring>
#include <fmt/format.h>

namespace py = pybind11;

namespace kiln::python {
namespace {

/// Keeps a Python object alive while kiln borrows its memory. The last reference may go on a
/// thread without the GIL (a run releases it), so the release takes the GIL.
std::shared_ptr<const void> keepAlive(py::object object) {
  return std::shared_ptr<const void>(new py::object(std::move(object)), [](const void *held) {
    py::gil_scoped_acquire gil;
    delete static_cast<const py::object *>(held);
  });
}

/// Keeps a consumed DLPack tensor alive while kiln borrows its memory; its deleter (which may
/// drop a Python reference: numpy's does) runs under the GIL.
std::shared_ptr<const void> keepAlive(DLManagedTensor *managed) {
  return std::shared_ptr<const void>(managed, [](const void *held) {
    auto *tensor = static_cast<DLManagedTensor *>(const_cast<void *>(held));
    if (tensor->deleter) {
      py::gil_scoped_acquire gil;
      tensor->deleter(tensor);
    }
  });
}

/// Copies a tensor of `elementSize`-byte elements laid out with `byteStrides` into compact
/// row-major bytes, reversing each element's bytes when `swapBytes` (big-endian numpy data).
void copyStrided(const uint8_t *source, const std::vector<int64_t> &shape,
                 const std::vector<int64_t> &byteStrides, int64_t elementSize, bool swapBytes,
                 uint8_t *destination) {
  int64_t count = 1;
  for (int64_t size : shape)
    count *= size;
  std::vector<int64_t> index(shape.size(), 0);
  for (int64_t element = 0; element < count; ++element) {
    int64_t offset = 0;
    for (size_t axis = 0; axis < shape.size(); ++axis)
      offset += index[axis] * byteStrides[axis];
    uint8_t *to = destination + element * elementSize;
    std::memcpy(to, source + offset, elementSize);
    if (swapBytes)
      std::reverse(to, to + elementSize);
    for (size_t axis = shape.size(); axis-- > 0;) {
      if (++index[axis] < shape[axis])
        break;
      index[axis] = 0;
    }
  }
}

/// Whether `byteStrides` lay `shape` out compact and row-major (the strides of dimensions of
/// size 1 do not matter; neither does anything when the tensor is empty).
bool isCompactRowMajor(const std::vector<int64_t> &shape, const std::vector<int64_t> &byteStrides,
                       int64_t elementSize) {
  if (std::ranges::find(shape, 0) != shape.end())
    return true;
  int64_t expected = elementSize;
  for (size_t axis = shape.size(); axis-- > 0;) {
    if (shape[axis] != 1 && byteStrides[axis] != expected)
      return false;
    expected *= shape[axis];
  }
  return true;
}

/// Where a caller's tensor is and how it is laid out: what borrowOrCopy decides on.
struct ForeignTensor {
  const uint8_t *data = nullptr;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<int64_t> byteStrides;
  bool bigEndian = false;
};

/// Why `tensor` cannot be read in place by kernels that assume `alignment`; nullopt when
/// it can.
std::optional<std::string> reasonToCopy(const ForeignTensor &tensor, int64_t alignment) {
  if (tensor.bigEndian)
    return "big-endian (kiln's tensors are little-endian)";
  if (!isCompactRowMajor(tensor.shape, tensor.byteStrides, dtypeByteSize(tensor.dtype)))
    return fmt::format("not C-contiguous (byte strides [{}])", fmt::join(tensor.byteStrides, ", "));
  if (reinterpret_cast<uintptr_t>(tensor.data) % static_cast<uintptr_t>(alignment) != 0)
    return fmt::format("its address is not {}-byte aligned, as kiln's kernels assume", alignment);
  return std::nullopt;
}

/// `value`, or its error with `what` in front ("input 'x': cannot make tensor ...").
template <typename T> T valueFor(const std::string &what, Expected<T> value) {
  if (!value)
    throw KilnError{
        Error(value.error().code(), fmt::format("{}: {}", what, value.error().message()))};
  return std::move(*value);
}

/// The one decision of this file: borrow `tensor` (kept alive by `owner`) or copy it.
BorrowedOrCopied borrowOrCopy(const ForeignTensor &tensor, std::shared_ptr<const void> owner,
                              const std::string &what) {
  std::optional<int64_t> count = checkedNumElements(tensor.shape);
  if (!count)
    throw KilnError{Error(ErrorCode::InvalidArgument,
                          fmt::format("{}: shape [{}] has a negative dimension or more than 2^53 "
                                      "elements",
                                      what, fmt::join(tensor.shape, ", ")))};
  auto buffer = std::make_shared<HostBuffer>();
  std::optional<std::string> reason =
      *count == 0 ? std::nullopt : reasonToCopy(tensor, kBufferAlignment);
  if (!reason) {
    auto bytes = static_cast<size_t>(*count * dtypeByteSize(tensor.dtype));
    buffer->tensor = valueFor(what, HostTensor::borrow(tensor.dtype, tensor.shape,
                                                       {tensor.data, bytes}, std::move(owner)));
    return {buffer, std::nullopt};
  }
  buffer->tensor = valueFor(what, HostTensor::create(tensor.dtype, tensor.shape));
  copyStrided(tensor.data, tensor.shape, tensor.byteStrides, dtypeByteSize(tensor.dtype),
              tensor.bigEndian, buffer->tensor.bytes().data());
  return {buffer, reason};
}

std::optional<DType> dtypeOfNumpy(const py::dtype &type) {
  switch (type.kind()) {
  case 'f':
    switch (type.itemsize()) {
    case 8: return DType::F64;
    case 4: return DType::F32;
    case 2: return DType::F16;
    }
    return std::nullopt;
  case 'i':
    switch (type.itemsize()) {
    case 8: return DType::I64;
    case 4: return DType::I32;
    case 1: return DType::I8;
    }
    return std::nullopt;
  case 'b':
    return DType::Bool;
  default:
    return std::nullopt;
  }
}

} // namespace

BorrowedOrCopied bufferOfNumpy(const py::array &array, const std::string &what) {
  py::dtype numpyType = array.dtype();
  std::optional<DType> dtype = dtypeOfNumpy(numpyType);
  if (!dtype)
    throw KilnError{Error(
        ErrorCode::TypeMismatch,
        fmt::format("{}: numpy dtype {} has no kiln dtype (kiln has {})", what,
                    py::str(static_cast<py::handle>(numpyType)).cast<std::string>(), dtypeList()))};
  ForeignTensor tensor;
  tensor.data = static_cast<const uint8_t *>(array.data());
  tensor.dtype = *dtype;
  tensor.shape.assign(array.shape(), array.shape() + array.ndim());
  tensor.byteStrides.assign(array.strides(), array.strides() + array.ndim());
  tensor.bigEndian = numpyType.byteorder() == '>';
  return borrowOrCopy(tensor, keepAlive(array), what);
}

namespace {

/// A consumed legacy DLPack capsule: its tensor as a ForeignTensor, where it lives, and the
/// DLPack tensor kept alive (its deleter runs when the last holder lets go).
struct ConsumedDlpack {
  ForeignTensor tensor;
  DLDevice device{};
  std::shared_ptr<const void> owner;
};

ConsumedDlpack consumeDlpack(const py::capsule &capsule, std::optional<DType> dtypeOverride,
                             const std::string &what) {
  if (!PyCapsule_IsValid(capsule.ptr(), "dltensor"))
    throw KilnError{Error(ErrorCode::InvalidArgument,
                          fmt::format("{}: not an unconsumed DLPack capsule", what))};
  auto *managed = static_cast<DLManagedTensor *>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
  // The capsule is consumed (ours to free) from here on, whatever happens.
  PyCapsule_SetName(capsule.ptr(), "used_dltensor");
  ConsumedDlpack consumed;
  consumed.owner = keepAlive(managed);
  const DLTensor &source = managed->dl_tensor;
  consumed.device = source.device;
  std::optional<DType> dtype = dtypeOfDlpack(source.dtype);
  if (dtypeOverride && (!dtype || dtypeByteSize(*dtype) == dtypeByteSize(*dtypeOverride)))
    dtype = dtypeOverride;
  if (!dtype)
    throw KilnError{Error(ErrorCode::TypeMismatch,
                          fmt::format("{}: DLPack type (code {}, {} bits, {} lanes) has no kiln "
                                      "dtype (kiln has {})",
                                      what, source.dtype.code, source.dtype.bits,
                                      source.dtype.lanes, dtypeList()))};
  ForeignTensor &tensor = consumed.tensor;
  tensor.data = static_cast<const uint8_t *>(source.data) + source.byte_offset;
  tensor.dtype = *dtype;
  tensor.shape.assign(source.shape, source.shape + source.ndim);
  // DLPack strides count elements; null means compact row-major.
  int64_t elementSize = dtypeByteSize(*dtype);
  tensor.byteStrides.assign(tensor.shape.size(), 0);
  int64_t compact = elementSize;
  for (size_t axis = tensor.shape.size(); axis-- > 0;) {
    tensor.byteStrides[axis] = source.strides ? source.strides[axis] * elementSize : compact;
    compact *= tensor.shape[axis];
  }
  return consumed;
}

} // namespace

BorrowedOrCopied bufferOfDlpack(const py::capsule &capsule, std::optional<DType> dtypeOverride,
                                const std::string &what) {
  ConsumedDlpack consumed = consumeDlpack(capsule, dtypeOverride, what);
  if (consumed.device.device_type != kDLCPU)
    throw KilnError{Error(ErrorCode::InvalidArgument,
                          fmt::format("{}: a DLPack tensor on device type {} (kiln reads host "
                                      "tensors only; move it to the CPU first)",
                                      what, static_cast<int>(consumed.device.device_type)))};
  return borrowOrCopy(consumed.tensor, std::move(consumed.owner), what);
}

DeviceTensorOrReason deviceTensorOfDlpack(const py::capsule &capsule,
                                          std::optional<DType> dtypeOverride,
                                          const std::string &what) {
  ConsumedDlpack consumed = consumeDlpack(capsule, dtypeOverride, what);
  if (consumed.device.device_type != kDLCUDA)
    throw KilnError{Error(ErrorCode::InvalidArgument,
                          fmt::format("{}: a DLPack tensor on device type {}, not a CUDA "
                                      "device ({})",
                                      what, static_cast<int>(consumed.device.device_type),
                                      static_cast<int>(kDLCUDA)))};
  const ForeignTensor &tensor = consumed.tensor;
  std::optional<int64_t> count = checkedNumElements(tensor.shape);
  if (!count || *count == 0)
    throw KilnError{Error(ErrorCode::InvalidArgument,
                          fmt::format("{}: a CUDA tensor of shape [{}] has no elements to read "
                                      "in place",
                                      what, fmt::join(tensor.shape, ", ")))};
  if (std::optional<std::string> reason = reasonToCopy(tensor, kDeviceAddressAlignment))
    return {nullptr, reason};
  auto device = std::make_shared<DeviceTensor>();
  device->address = reinterpret_cast<runtime::DevicePtr>(tensor.data);
  device->dtype = tensor.dtype;
  device->shape = tensor.shape;
  device->ordinal = consumed.device.device_id;
  device->owner = std::move(consumed.owner);
  return {device, std::nullopt};
}

void bindTensorBorrowing(py::module_ &module) {
  auto result = [](BorrowedOrCopied value) {
    return py::make_tuple(value.buffer, value.copyReason ? py::object(py::str(*value.copyReason))
                                                         : py::object(py::none()));
  };
  module.def(
      "_buffer_of_numpy",
      [result](const py::array &array, const std::string &what) {
        return result(bufferOfNumpy(array, what));
      },
      py::arg("array").noconvert(), py::arg("what"),
      "(HostBuffer, None) borrowing a numpy array's memory, or (a copy, why).");
  module.def(
      "_buffer_of_dlpack",
      [result](const py::capsule &capsule, std::optional<std::string> dtype,
               const std::string &what) {
        std::optional<DType> override;
        if (dtype)
          override = dtypeNamed(*dtype);
        return result(bufferOfDlpack(capsule, override, what));
      },
      "(HostBuffer, None) borrowing a legacy DLPack capsule's tensor, or (a copy, why).");
  py::class_<DeviceTensor, std::shared_ptr<DeviceTensor>>(
      module, "DeviceTensor",
      "A CUDA tensor kiln's kernels read or write in place (from a legacy DLPack capsule).")
      .def_property_readonly("address", [](const DeviceTensor &t) { return t.address; })
      .def_property_readonly("dtype", [](const DeviceTensor &t) { return dtypeName(t.dtype); })
      .def_property_readonly("shape", [](const DeviceTensor &t) { return t.shape; })
      .def_property_readonly("ordinal", [](const DeviceTensor &t) { return t.ordinal; });
  module.def(
      "_device_tensor_of_dlpack",
      [](const py::capsule &capsule, std::optional<std::string> dtype, const std::string &what) {
        DeviceTensorOrReason value = deviceTensorOfDlpack(capsule, optionalDtype(dtype), what);
        return py::make_tuple(value.tensor ? py::cast(value.tensor) : py::object(py::none()),
                              value.copyReason ? py::object(py::str(*value.copyReason))
                                               : py::object(py::none()));
      },
      "(DeviceTensor, None) for a CUDA DLPack capsule kernels can use in place, or (None, why "
      "not).");
}

} // namespace kiln::python
