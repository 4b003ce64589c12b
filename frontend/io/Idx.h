// Reading IDX files, the format of MNIST and Fashion-MNIST: the bytes 0 0,
// a type code and a dimension count, the big-endian 32-bit dimensions, then
// big-endian data. Gzipped files (.gz) are decompressed transparently.
#pragma once

#include "support/Error.h"
#include "support/HostTensor.h"

#include <string>

namespace kiln::io {

/// Any IDX file (unsigned/signed byte, i16, i32, f32 or f64 elements) as an
/// F64 tensor with the file's shape; every element type converts exactly.
/// Errors: IOError for a missing or unreadable file (naming the path and the
/// system's reason); FormatError for bad magic, an unknown type code, corrupt
/// gzip data, dimensions of more than 2^30 elements, or a size that disagrees
/// with the dimensions (expected vs actual bytes). The header is checked
/// before any data is read, and memory grows only with the data actually
/// present, so a file whose header lies cannot exhaust memory.
Expected<HostTensor> readIdx(const std::string &path);

/// An unsigned-byte image file [N, H, W] as F32 [N, 1, H, W] (NCHW with one
/// channel), scaled to [0, 1] when `normalize` is set, else 0..255.
Expected<HostTensor> readIdxImages(const std::string &path, bool normalize = true);

/// An unsigned-byte label file [N] as I64 [N].
Expected<HostTensor> readIdxLabels(const std::string &path);

} // namespace kiln::io
