// DLPack export of HostBuffers and the copies of numpy arrays and DLPack tensors into
// HostTensors (see TensorConversion.h).
#include "TensorConversion.h"

#include "PythonErrors.h"

#include <dlpack/dlpack.h>
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstring>
#include <fmt/format.h>

namespace py = pybind11;

namespace kiln::python {
namespace {

std::string dtypeList() {
  std::string names;
  for (int index = 0; index < kNumDTypes; ++index)
    names += (index ? ", " : "") + std::string(dtypeName(static_cast<DType>(index)));
  return names;
}

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

/// Copies a strided tensor of `elementSize`-byte elements into compact row-major bytes.
void copyStrided(const uint8_t *source, const std::vector<int64_t> &shape, const int64_t *strides,
                 int64_t elementSize, uint8_t *destination) {
  int64_t count = 1;
  for (int64_t size : shape)
    count *= size;
  std::vector<int64_t> index(shape.size(), 0);
  for (int64_t element = 0; element < count; ++element) {
    int64_t offset = 0;
    for (size_t axis = 0; axis < shape.size(); ++axis)
      offset += index[axis] * strides[axis];
    std::memcpy(destination + element * elementSize, source + offset * elementSize, elementSize);
    for (size_t axis = shape.size(); axis-- > 0;) {
      if (++index[axis] < shape[axis])
        break;
      index[axis] = 0;
    }
  }
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

py::buffer_info bufferInfo(HostBuffer &buffer) {
  HostTensor &tensor = buffer.tensor;
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
  return py::buffer_info(tensor.bytes().data(), elementSize, format,
                         static_cast<py::ssize_t>(shape.size()), shape, strides);
}

} // namespace

DType dtypeNamed(const std::string &name) {
  std::optional<DType> dtype = parseDType(name);
  if (!dtype)
    throw KilnError{Error(ErrorCode::InvalidArgument,
                          fmt::format("unknown dtype '{}' (kiln has {})", name, dtypeList()))};
  return *dtype;
}

HostTensor hostTensorFromNumpy(const py::handle &object, const std::string &what) {
  py::array array = py::array::ensure(object, py::array::c_style);
  if (!array)
    throw KilnError{Error(ErrorCode::InvalidArgument,
                          fmt::format("{}: expected a numpy array or a torch tensor", what))};
  py::dtype numpyType = array.dtype();
  char kind = numpyType.kind();
  int64_t size = numpyType.itemsize();
  std::optional<DType> dtype;
  if (kind == 'f')
    dtype = size == 8 ? DType::F64 : size == 4 ? DType::F32 : size == 2 ? DType::F16 : dtype;
  else if (kind == 'i')
    dtype = size == 8 ? DType::I64 : size == 4 ? DType::I32 : size == 1 ? DType::I8 : dtype;
  else if (kind == 'b')
    dtype = DType::Bool;
  if (!dtype)
    throw KilnError{Error(
        ErrorCode::TypeMismatch,
        fmt::format("{}: numpy dtype {} has no kiln dtype (kiln has {})", what,
                    py::str(static_cast<py::handle>(numpyType)).cast<std::string>(), dtypeList()))};
  std::vector<int64_t> shape(array.shape(), array.shape() + array.ndim());
  HostTensor tensor = valueOrThrow(HostTensor::create(*dtype, shape));
  if (tensor.byteSize() > 0)
    std::memcpy(tensor.bytes().data(), array.data(), tensor.byteSize());
  return tensor;
}

HostTensor hostTensorFromDlpack(const py::capsule &capsule, std::optional<DType> dtypeOverride,
                                const std::string &what) {
  if (!PyCapsule_IsValid(capsule.ptr(), "dltensor"))
    throw KilnError{Error(ErrorCode::InvalidArgument,
                          fmt::format("{}: not an unconsumed DLPack capsule", what))};
  auto *managed = static_cast<DLManagedTensor *>(PyCapsule_GetPointer(capsule.ptr(), "dltensor"));
  // The capsule is consumed (ours to free) from here on, whatever happens.
  PyCapsule_SetName(capsule.ptr(), "used_dltensor");
  struct Release {
    DLManagedTensor *managed;
    ~Release() {
      if (managed->deleter)
        managed->deleter(managed);
    }
  } release{managed};
  const DLTensor &source = managed->dl_tensor;
  if (source.device.device_type != kDLCPU)
    throw KilnError{Error(ErrorCode::InvalidArgument,
                          fmt::format("{}: a DLPack tensor on device type {} (kiln copies "
                                      "host tensors only; move it to the CPU first)",
                                      what, static_cast<int>(source.device.device_type)))};
  std::optional<DType> dtype = dtypeOfDlpack(source.dtype);
  if (dtypeOverride && (!dtype || dtypeByteSize(*dtype) == dtypeByteSize(*dtypeOverride)))
    dtype = dtypeOverride;
  if (!dtype)
    throw KilnError{Error(ErrorCode::TypeMismatch,
                          fmt::format("{}: DLPack type (code {}, {} bits, {} lanes) has no kiln "
                                      "dtype (kiln has {})",
                                      what, source.dtype.code, source.dtype.bits,
                                      source.dtype.lanes, dtypeList()))};
  std::vector<int64_t> shape(source.shape, source.shape + source.ndim);
  HostTensor tensor = valueOrThrow(HostTensor::create(*dtype, shape));
  const auto *data = static_cast<const uint8_t *>(source.data) + source.byte_offset;
  int64_t elementSize = dtypeByteSize(*dtype);
  if (tensor.byteSize() == 0)
    return tensor;
  if (source.strides == nullptr) {
    std::memcpy(tensor.bytes().data(), data, tensor.byteSize());
  } else {
    copyStrided(data, shape, source.strides, elementSize, tensor.bytes().data());
  }
  return tensor;
}

py::dict buffersOf(NamedTensors tensors) {
  py::dict out;
  for (auto &[name, tensor] : tensors)
    out[py::str(name)] = std::make_shared<HostBuffer>(HostBuffer{std::move(tensor)});
  return out;
}

NamedTensors namedTensorsOf(const py::dict &buffers) {
  NamedTensors tensors;
  for (auto [name, buffer] : buffers)
    tensors.emplace(name.cast<std::string>(), buffer.cast<const HostBuffer &>().tensor);
  return tensors;
}

void bindTensorConversion(py::module_ &module) {
  py::class_<HostBuffer, std::shared_ptr<HostBuffer>>(
      module, "HostBuffer",
      "A tensor kiln made (an output, a parameter value). numpy.asarray (the buffer "
      "protocol) and torch.from_dlpack view its memory without copying.",
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
      "_from_numpy",
      [](py::handle array, const std::string &what) {
        return std::make_shared<HostBuffer>(HostBuffer{hostTensorFromNumpy(array, what)});
      },
      "A HostBuffer copied from a numpy array.");
  module.def(
      "_from_dlpack",
      [](py::capsule capsule, std::optional<std::string> dtype, const std::string &what) {
        std::optional<DType> override;
        if (dtype)
          override = dtypeNamed(*dtype);
        return std::make_shared<HostBuffer>(
            HostBuffer{hostTensorFromDlpack(capsule, override, what)});
      },
      "A HostBuffer copied from a legacy DLPack capsule.");
}

} // namespace kiln::python
