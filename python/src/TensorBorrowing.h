// Tensors coming into kiln from Python: a numpy array or a host DLPack tensor becomes a
// HostBuffer that borrows its memory when kiln's kernels can read it in place, and a copy
// (made once, by its strides) when they cannot, with the reason; a CUDA DLPack tensor
// becomes a DeviceTensor that a cuda model's kernels use in place.
#pragma once

#include "TensorConversion.h"

#include "runtime/Device.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace kiln::python {

/// A caller's tensor as kiln holds it: `buffer` views its memory when `copyReason` is empty,
/// else it is a copy and `copyReason` says why ("not C-contiguous", ...).
struct BorrowedOrCopied {
  std::shared_ptr<HostBuffer> buffer;
  std::optional<std::string> copyReason;
};

/// `array` borrowed when it is C-contiguous, in native byte order and at an address with the
/// alignment kernels assume (AlignedBytes::isBorrowable; a read-only array borrows too: kiln
/// never writes borrowed memory), the buffer keeping the array alive; otherwise copied.
/// A kiln.Error naming `what` ("input 'x'") when its dtype has no kiln dtype.
BorrowedOrCopied bufferOfNumpy(const pybind11::array &array, const std::string &what);

/// The tensor behind a legacy DLPack capsule ("dltensor", as torch.utils.dlpack.to_dlpack
/// makes), which it consumes: borrowed when compact row-major and aligned as above (the
/// buffer keeps the DLPack tensor, so its producer's tensor, alive), otherwise copied by its
/// strides. Host memory only. `dtype` overrides the capsule's type of the same size (torch's
/// bool travels as u8).
BorrowedOrCopied bufferOfDlpack(const pybind11::capsule &capsule, std::optional<DType> dtype,
                                const std::string &what);

/// A CUDA tensor kiln's kernels read (an input) or write (an output) where it is: its
/// device address, type and GPU, and the DLPack tensor kept alive while kiln holds it.
struct DeviceTensor {
  runtime::DevicePtr address = 0;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  int ordinal = 0; ///< the CUDA device number
  std::shared_ptr<const void> owner;
};

/// `tensor` when kernels can use it in place; else null and why not.
struct DeviceTensorOrReason {
  std::shared_ptr<DeviceTensor> tensor;
  std::optional<std::string> copyReason;
};

/// The CUDA tensor behind a legacy DLPack capsule (kDLCUDA), which it consumes: usable in
/// place when compact row-major, non-empty and kDeviceAddressAlignment aligned, else the
/// reason ("not C-contiguous ...": the caller copies it on the device). A kiln.Error for a
/// capsule on another device type, an empty tensor or a type kiln lacks. `dtype` as for
/// bufferOfDlpack.
DeviceTensorOrReason deviceTensorOfDlpack(const pybind11::capsule &capsule,
                                          std::optional<DType> dtype, const std::string &what);

/// Registers kiln._kiln._buffer_of_numpy, _buffer_of_dlpack, DeviceTensor and
/// _device_tensor_of_dlpack.
void bindTensorBorrowing(pybind11::module_ &module);

} // namespace kiln::python
