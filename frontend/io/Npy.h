// Reading and writing NumPy .npy files (format versions 1.0 to 3.0): one array per file, a
// magic string, a Python-dict header ({'descr': '<f4', 'fortran_order': False, 'shape':
// (2, 3), }) and the packed data.
#pragma once

#include "support/HostTensor.h"

#include <string>
#include <string_view>

namespace kiln::io {

/// The .npy dtype string of a kiln dtype: '<f4', '<f8', '<f2', '<i8', '<i4', '|i1', '|b1'.
/// bf16 has no NumPy dtype; kiln writes it as '<V2' (two raw bytes) and reads '<V2' back as
/// bf16. The fp8 dtypes have none either and are an error.
Expected<std::string> npyDescr(DType dtype);

/// The array in `bytes` (the contents of a .npy file). C and Fortran order; little- and
/// big-endian data. FormatError naming `what` for a bad magic, header or size, Unsupported
/// for dtypes kiln lacks (uint8, complex, objects, ...).
Expected<HostTensor> parseNpy(std::string_view bytes, std::string_view what = "<memory>");
/// The .npy bytes of `tensor` (version 1.0, or 2.0 when the header needs it), C order.
Expected<std::string> serializeNpy(const HostTensor &tensor);

/// The largest .npy file kiln reads (64 GiB); the array must also fit in memory.
inline constexpr uint64_t kMaxNpyBytes = uint64_t{1} << 36;

/// Reads the regular file `path`.
Expected<HostTensor> loadNpy(const std::string &path);
/// Writes `path` atomically (a temporary file renamed into place).
Expected<void> saveNpy(const std::string &path, const HostTensor &tensor);

} // namespace kiln::io
