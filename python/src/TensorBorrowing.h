// Tensors coming into kiln from Python: a numpy array or a DLPack tensor becomes a HostBuffer
// that borrows its memory when kiln's kernels can read it in place, and a copy (made once,
// by its strides) when they cannot, with the reason.
#pragma once

#include "TensorConversion.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <memory>
#include <optional>
#include <string>

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

/// Registers kiln._kiln._buffer_of_numpy and _buffer_of_dlpack.
void bindTensorBorrowing(pybind11::module_ &module);

} // namespace kiln::python
