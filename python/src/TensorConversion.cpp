// HostBuffers out to numpy and torch (buffer protocol, DLPack export), and the dtype tables
// (see TensorConversion.h).
#include "TensorConversion.h"

#include "PythonErrors.h"
#include "TensorBorrowing.h"

#include <dlpack/dlpack.h>
#include <pybind11/stl.h>

#include <fmt/format.h>

namespace py = pybind11;

namespace kiln::python {
namespace {

/// DLPack's type for `dtype`; nullopt for the f8 types, which DLPack 0.6 cannot name. bool
/// goes out as u8 (DLPack 0.6 has no bool either); kiln's Python side views it as bool.
std::optional<DLDataType> dlpackType(DType dtype) {
  auto type = [](uint8_t code, uint8_t bits) { return DLDataType{code, bits, 1}; };
  switch (dtype) {
  case DType::F64:
    return type(kDLFloat, 64);
  case DType::F32:
    return type(kDLFloat, 32);
  case DType::F16:
    return type(kDLFloat, 16);
  case DType::BF16:
    return type(kDLBfloat, 16);
  case DType::I64:
    return type(kDLInt, 64);
  case DType::I32:
    return type(kDLInt, 32);
  case DType::I8:
    return type(kDLInt, 8);
  case DType::Bool:
    return type(kDLUInt, 8);
  case DType::F8E4M3:
  case DType::F8E5M2:
    return std::nullopt;
  }
  return std::nullopt;
}

/// What a DLPack capsule of a HostBuffer owns: the managed tensor, its shape and the buffer.
struct DlpackExport {
  DLManagedTensor managed{};
  std::vector<int64_t> shape;
  std::shared_ptr<HostBuffer> owner;
};

void deleteExport(DLManagedTensor *managed) {
  delete static_cast<DlpackExport *>(managed->manager_ctx);
}

/// The legacy protocol: a consumer renames the capsule "used_dltensor" and calls the
/// deleter itself; an unconsumed capsule frees the tensor when it dies.
void destroyCapsule(PyObject *capsule) {
  if (PyCapsule_IsValid(capsule, "dltensor")) {
    auto *managed = static_cast<DLManagedTensor *>(PyCapsule_GetPointer(capsule, "dltensor"));
    if (managed && managed->deleter)
      managed->deleter(managed);
  }
}

py::capsule exportDlpack(const std::shared_ptr<HostBuffer> &buffer) {
  std::optional<DLDataType> type = dlpackType(buffer->tensor.dtype());
  if (!type)
    throw KilnError{
        Error(ErrorCode::Unsupported, fmt::format("a {} tensor has no DLPack type: convert it with "
                                                  "HostBuffer.as_dtype('f32') first",
                                                  dtypeName(buffer->tensor.dtype())))};
  auto *exported = new DlpackExport{};
  exported->owner = buffer;
  exported->shape = buffer->tensor.shape();
  DLTensor &tensor = exported->managed.dl_tensor;
  // Mutable access: a buffer that borrows copies first, as DLPack 0.6 views are writable.
  tensor.data = buffer->tensor.bytes().data();
  tensor.device = DLDevice{kDLCPU, 0};
  tensor.ndim = static_cast<int32_t>(exported->shape.size());
  tensor.dtype = *type;
  tensor.shape = exported->shape.data();
  tensor.strides = nullptr; // compact row-major
  tensor.byte_offset = 0;
  exported->managed.manager_ctx = exported;
  exported->managed.deleter = deleteExport;
  PyObject *capsule = PyCapsule_New(&exported->managed, "dltensor", destroyCapsule);
  if (!capsule) {
    delete exported;
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::capsule>(capsule);
}

/// The buffer protocol's format character of `dtype`; nullptr where numpy has none.
const char *bufferFormat(DType dtype) {
  switch (dtype) {
  case DType::F64:
    return "d";
  case DType::F32:
    return "f";
  case DType::F16:
    return "e";
  case DType::I64:
    return "q";
  case DType::I32:
    return "i";
  case DType::I8:
    return "b";
  case DType::Bool:
    return "?";
  case DType::BF16:
  case DType::F8E4M3:
  case DType::F8E5M2:
    return nullptr;
  }
  return nullptr;
}

py::buffer_info bufferInfo(const HostBuffer &buffer) {
  const HostTensor &tensor = buffer.tensor;
  const char *format = bufferFormat(tensor.dtype());
  if (!format)
    throw KilnError{
        Error(ErrorCode::Unsupported, fmt::format("numpy has no {} dtype: convert the tensor with "
                                                  "HostBuffer.as_dtype('f32') first",
                                                  dtypeName(tensor.dtype())))};
  int64_t elementSize = dtypeByteSize(tensor.dtype());
  std::vector<py::ssize_t> shape(tensor.shape().begin(), tensor.shape().end());
  std::vector<py::ssize_t> strides(shape.size(), elementSize);
  for (size_t axis = shape.size(); axis-- > 1;)
    strides[axis - 1] = strides[axis] * shape[axis];
  // Borrowed memory is the caller's, and kiln never writes it: numpy views it read-only.
  return py::buffer_info(const_cast<uint8_t *>(tensor.bytes().data()), elementSize, format,
                         static_cast<py::ssize_t>(shape.size()), shape, strides,
                         tensor.isBorrowed());
}

} // namespace

std::string dtypeList() {
  std::string names;
  for (int index = 0; index < kNumDTypes; ++index)
    names += (index ? ", " : "") + std::string(dtypeName(static_cast<DType>(index)));
  return names;
}

std::optional<DType> dtypeOfDlpack(DLDataType type) {
  if (type.lanes != 1)
    return std::nullopt;
  for (int index = 0; index < kNumDTypes; ++index) {
    auto dtype = static_cast<DType>(index);
    std::optional<DLDataType> candidate = dlpackType(dtype);
    if (candidate && candidate->code == type.code && candidate->bits == type.bits &&
        dtype != DType::Bool)
      return dtype;
  }
  if (type.code == 6 /* kDLBool in DLPack 0.8 */ && type.bits == 8)
    return DType::Bool;
  return std::nullopt;
}

DType dtypeNamed(const std::string &name) {
  std::optional<DType> dtype = parseDType(name);
  if (!dtype)
    throw KilnError{Error(ErrorCode::InvalidArgument,
                          fmt::format("unknown dtype '{}' (kiln has {})", name, dtypeList()))};
  return *dtype;
}

py::dict buffersOf(NamedTensors tensors) {
  py::dict out;
  for (auto &[name, tensor] : tensors)
    out[py::str(name)] = std::make_shared<HostBuffer>(HostBuffer{std::move(tensor)});
  return out;
}

NamedTensors namedTensorsOf(const py::dict &buffers) {
  NamedTensors tensors;
  for (auto [name, object] : buffers) {
    auto buffer = object.cast<std::shared_ptr<HostBuffer>>();
    const HostTensor &tensor = buffer->tensor;
    // emplace: a NamedTensors built from a list would copy the views.
    tensors.emplace(name.cast<std::string>(),
                    valueOrThrow(HostTensor::borrow(tensor.dtype(), tensor.shape(),
                                                    tensor.bytes(), buffer)));
  }
  return tensors;
}

void bindTensorConversion(py::module_ &module) {
  py::class_<HostBuffer, std::shared_ptr<HostBuffer>>(
      module, "HostBuffer",
      "A tensor kiln made (an output, a parameter value) or one it borrows (an input). "
      "numpy.asarray (the buffer protocol) and torch.from_dlpack view its memory without "
      "copying.",
      py::buffer_protocol())
      .def_buffer(bufferInfo)
      .def_property_readonly(
          "dtype", [](const HostBuffer &b) { return std::string(dtypeName(b.tensor.dtype())); })
      .def_property_readonly(
          "shape", [](const HostBuffer &b) { return py::tuple(py::cast(b.tensor.shape())); })
      .def_property_readonly(
          "address",
          [](const HostBuffer &b) { return reinterpret_cast<uintptr_t>(b.tensor.bytes().data()); },
          "The address of the first element: what a zero-copy view shares.")
      .def_property_readonly(
          "borrowed", [](const HostBuffer &b) { return b.tensor.isBorrowed(); },
          "Whether the buffer views a caller's memory (an input read in place, read-only).")
      .def(
          "as_dtype",
          [](const HostBuffer &b, const std::string &dtype) {
            return std::make_shared<HostBuffer>(HostBuffer{b.tensor.castTo(dtypeNamed(dtype))});
          },
          "A converted copy (a graph cast's rules), for dtypes numpy or DLPack lack.")
      .def(
          "__dlpack__",
          [](const std::shared_ptr<HostBuffer> &b, py::object /*stream*/) {
            return exportDlpack(b);
          },
          py::arg("stream") = py::none())
      .def("__dlpack_device__", [](const HostBuffer &) { return py::make_tuple(int(kDLCPU), 0); });
  module.def(
      "_zeros",
      [](std::vector<int64_t> shape, const std::string &dtype) {
        return std::make_shared<HostBuffer>(
            HostBuffer{valueOrThrow(HostTensor::create(dtypeNamed(dtype), std::move(shape)))});
      },
      "A zero-filled HostBuffer: kiln's own 64-byte aligned memory.");
  bindTensorBorrowing(module);
}

} // namespace kiln::python
