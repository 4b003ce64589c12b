// IDX parsing: the header is read and checked first (through zlib, which also
// reads gzipped files), then exactly the data it announces, then the
// big-endian elements are converted.
#include "frontend/io/Idx.h"

#include "support/RegularFile.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fmt/format.h>
#include <memory>
#include <vector>
#include <zlib.h>

namespace kiln::io {

namespace {

/// An IDX element type: its code in the header, byte size and name.
struct IdxElementType {
  uint8_t code;
  int size;
  const char *name;
};

constexpr IdxElementType kIdxTypes[] = {
    {0x08, 1, "unsigned byte"}, {0x09, 1, "signed byte"}, {0x0b, 2, "int16"},
    {0x0c, 4, "int32"},         {0x0d, 4, "float32"},     {0x0e, 8, "float64"},
};

const IdxElementType *findIdxType(uint8_t code) {
  for (const IdxElementType &type : kIdxTypes)
    if (type.code == code)
      return &type;
  return nullptr;
}

/// The most elements kiln reads from one IDX file: 2^30 (about 20 times
/// Fashion-MNIST's 47M training pixels). A header that claims more is
/// rejected before any data is read, so a small corrupt or hostile file
/// (a gzip stream inflates a thousandfold) cannot exhaust memory.
constexpr int64_t kMaxIdxElements = int64_t{1} << 30;

/// A parsed file: element type, dimensions and the element bytes.
struct IdxFile {
  const IdxElementType *type = nullptr;
  std::vector<int64_t> shape;
  int64_t count = 0;
  std::vector<uint8_t> data; ///< Exactly count * type->size bytes.
};

std::unexpected<Error> formatError(const std::string &path, const std::string &what) {
  return makeError(ErrorCode::FormatError, fmt::format("{}: {}", path, what));
}

/// Reads a file through zlib, which decompresses gzip data and passes any
/// other file through unchanged, so plain and gzipped files are read the same
/// way: the header first, then exactly the data it announces.
class IdxSource {
public:
  static Expected<IdxSource> open(const std::string &path) {
    // Only a regular file: zlib would wait on a FIFO and never finish /dev/zero.
    KILN_TRY(RegularFile file, openRegularFile(path, "IDX file"));
    errno = 0;
    gzFile gz = gzdopen(file.descriptor.get(), "rb");
    if (!gz)
      return makeError(ErrorCode::IOError,
                       fmt::format("cannot open {}: {}", path,
                                   errno ? std::strerror(errno) : "out of memory in zlib"));
    file.descriptor.release(); // gzclose closes it
    gzbuffer(gz, 1 << 17);
    return IdxSource(path, gz);
  }

  /// Reads up to `size` bytes, fewer only at the end of the file.
  Expected<size_t> read(uint8_t *out, size_t size) {
    size_t total = 0;
    while (total < size) {
      auto chunk = static_cast<unsigned>(std::min<size_t>(size - total, 1 << 20));
      int got = gzread(gz_.get(), out + total, chunk);
      if (got < 0)
        return streamError();
      if (got == 0)
        break;
      total += static_cast<size_t>(got);
    }
    // A gzip stream cut short reads as the end of the file; zlib records why.
    if (total < size) {
      int code = Z_OK;
      gzerror(gz_.get(), &code);
      if (code != Z_OK && code != Z_STREAM_END)
        return streamError();
    }
    return total;
  }

  /// "file size" or, for gzip input, "decompressed size": what messages
  /// about the byte count talk about.
  const char *sizeWord() { return gzdirect(gz_.get()) ? "file size" : "decompressed size"; }

private:
  IdxSource(std::string path, gzFile gz) : path_(std::move(path)), gz_(gz, gzclose) {}

  std::unexpected<Error> streamError() {
    int code = Z_OK;
    const char *message = gzerror(gz_.get(), &code);
    if (code == Z_ERRNO)
      return makeError(ErrorCode::IOError,
                       fmt::format("cannot read {}: {}", path_, std::strerror(errno)));
    if (code == Z_BUF_ERROR)
      return formatError(path_, "truncated gzip stream (unexpected end of file)");
    return formatError(path_, fmt::format("corrupt gzip data: {}", message));
  }

  std::string path_;
  std::unique_ptr<gzFile_s, int (*)(gzFile)> gz_;
};

/// Reads the header: magic, type code, rank and dimensions, with the element
/// count checked against kMaxIdxElements.
Expected<IdxFile> readIdxHeader(const std::string &path, IdxSource &source) {
  IdxFile idx;
  uint8_t start[4];
  KILN_TRY(size_t got, source.read(start, 4));
  if (got < 4)
    return formatError(path, fmt::format("truncated IDX header: expected at least 4 bytes, the "
                                         "{} is {} bytes",
                                         source.sizeWord(), got));
  if (start[0] != 0 || start[1] != 0)
    return formatError(path, fmt::format("bad magic: the file starts with 0x{:02x} 0x{:02x}, an "
                                         "IDX file starts with 0x00 0x00",
                                         start[0], start[1]));
  idx.type = findIdxType(start[2]);
  if (!idx.type)
    return formatError(path, fmt::format("unsupported IDX type code 0x{:02x} (expected 0x08, "
                                         "0x09, 0x0b, 0x0c, 0x0d or 0x0e)",
                                         start[2]));
  int rank = start[3];
  if (rank == 0)
    return formatError(path, "bad IDX header: the file declares 0 dimensions");
  std::vector<uint8_t> dims(4 * static_cast<size_t>(rank));
  KILN_TRY(size_t gotDims, source.read(dims.data(), dims.size()));
  if (gotDims < dims.size())
    return formatError(path, fmt::format("truncated IDX header: expected {} bytes for {} "
                                         "dimensions, the {} is {} bytes",
                                         4 + dims.size(), rank, source.sizeWord(), 4 + gotDims));
  // The bound applies to the product of the non-zero dimensions, as for every
  // tensor (strides multiply them even when another dimension is zero). Each
  // dimension is below 2^32 and the running product stays <= 2^30, so the
  // products cannot overflow.
  int64_t nonZeroProduct = 1;
  bool tooLarge = false, empty = false;
  for (int d = 0; d < rank; ++d) {
    const uint8_t *p = dims.data() + 4 * d;
    int64_t dim = (int64_t{p[0]} << 24) | (int64_t{p[1]} << 16) | (int64_t{p[2]} << 8) | p[3];
    idx.shape.push_back(dim);
    if (dim == 0)
      empty = true;
    else if (!tooLarge && nonZeroProduct > kMaxIdxElements / dim)
      tooLarge = true;
    else if (!tooLarge)
      nonZeroProduct *= dim;
  }
  idx.count = empty ? 0 : nonZeroProduct;
  if (tooLarge)
    return formatError(path, fmt::format("IDX dimensions [{}] describe more than 2^30 elements{}, "
                                         "the most kiln reads from one file",
                                         fmt::join(idx.shape, ","),
                                         empty ? " (counting the non-zero ones)" : ""));
  return idx;
}

Expected<IdxFile> parseIdxFile(const std::string &path) {
  KILN_TRY(IdxSource source, IdxSource::open(path));
  KILN_TRY(IdxFile idx, readIdxHeader(path, source));
  uint64_t headerSize = 4 + 4 * idx.shape.size();
  uint64_t dataSize = static_cast<uint64_t>(idx.count) * static_cast<uint64_t>(idx.type->size);
  uint64_t expected = headerSize + dataSize;
  auto sizeMismatch = [&](const char *what, const std::string &actual) {
    return formatError(
        path, fmt::format("{}: expected {} bytes ({} header + {} {} elements of shape [{}]), the "
                          "{} is {} bytes",
                          what, expected, headerSize, idx.count, idx.type->name,
                          fmt::join(idx.shape, ","), source.sizeWord(), actual));
  };

  // Read in chunks, growing the buffer only as data arrives: a header that
  // claims more than the file holds costs no more memory than the file.
  constexpr size_t kChunk = size_t{1} << 20;
  size_t total = static_cast<size_t>(dataSize);
  idx.data.reserve(std::min(total, 16 * kChunk));
  while (idx.data.size() < total) {
    size_t used = idx.data.size();
    size_t want = std::min(kChunk, total - used);
    idx.data.resize(used + want);
    KILN_TRY(size_t got, source.read(idx.data.data() + used, want));
    idx.data.resize(used + got);
    if (got < want)
      return sizeMismatch("truncated data", std::to_string(headerSize + idx.data.size()));
  }

  // Reading past the data also makes zlib check the gzip trailer (CRC and
  // length). Trailing bytes are counted up to a limit, not stored.
  constexpr uint64_t kTrailingCountLimit = uint64_t{1} << 20;
  uint64_t trailing = 0;
  uint8_t scratch[1 << 14];
  while (trailing <= kTrailingCountLimit) {
    KILN_TRY(size_t got, source.read(scratch, sizeof(scratch)));
    if (got == 0)
      break;
    trailing += got;
  }
  if (trailing > kTrailingCountLimit)
    return sizeMismatch("trailing bytes after the data",
                        fmt::format("more than {}", expected + kTrailingCountLimit));
  if (trailing > 0)
    return sizeMismatch("trailing bytes after the data", std::to_string(expected + trailing));
  return idx;
}

/// Element `i` of a parsed file, converted from big-endian; exact in fp64.
double loadElement(const IdxFile &idx, int64_t i) {
  const uint8_t *p = idx.data.data() + i * idx.type->size;
  uint64_t raw = 0;
  for (int b = 0; b < idx.type->size; ++b)
    raw = (raw << 8) | p[b];
  switch (idx.type->code) {
  case 0x08: return static_cast<double>(raw);
  case 0x09: return static_cast<int8_t>(raw);
  case 0x0b: return static_cast<int16_t>(raw);
  case 0x0c: return static_cast<int32_t>(raw);
  case 0x0d: return std::bit_cast<float>(static_cast<uint32_t>(raw));
  case 0x0e: return std::bit_cast<double>(raw);
  }
  KILN_UNREACHABLE("IDX type code passed validation but has no decoder");
}

std::unexpected<Error> kindMismatch(const std::string &path, const IdxFile &idx,
                                    const char *expected) {
  return formatError(path, fmt::format("expected {}, found {} elements of shape [{}]", expected,
                                       idx.type->name, fmt::join(idx.shape, ",")));
}

/// The result tensor; its allocation (up to 8 bytes per file byte) can fail.
Expected<HostTensor> createTensor(const std::string &path, DType dtype,
                                  std::vector<int64_t> shape) {
  auto tensor = HostTensor::create(dtype, std::move(shape));
  if (!tensor)
    return makeError(tensor.error().code(),
                     fmt::format("cannot read {}: {}", path, tensor.error().message()));
  return tensor;
}

} // namespace

Expected<HostTensor> readIdx(const std::string &path) {
  KILN_TRY(IdxFile idx, parseIdxFile(path));
  KILN_TRY(HostTensor tensor, createTensor(path, DType::F64, idx.shape));
  auto values = tensor.as<double>();
  for (int64_t i = 0; i < idx.count; ++i)
    values[static_cast<size_t>(i)] = loadElement(idx, i);
  return tensor;
}

Expected<HostTensor> readIdxImages(const std::string &path, bool normalize) {
  KILN_TRY(IdxFile idx, parseIdxFile(path));
  if (idx.type->code != 0x08 || idx.shape.size() != 3)
    return kindMismatch(path, idx, "unsigned-byte images of shape [N, H, W]");
  KILN_TRY(HostTensor tensor,
           createTensor(path, DType::F32, {idx.shape[0], 1, idx.shape[1], idx.shape[2]}));
  auto values = tensor.as<float>();
  // Dividing in fp64 and rounding once gives the correctly rounded v / 255.
  const double divisor = normalize ? 255.0 : 1.0;
  const uint8_t *data = idx.data.data();
  for (int64_t i = 0; i < idx.count; ++i)
    values[static_cast<size_t>(i)] = static_cast<float>(data[i] / divisor);
  return tensor;
}

Expected<HostTensor> readIdxLabels(const std::string &path) {
  KILN_TRY(IdxFile idx, parseIdxFile(path));
  if (idx.type->code != 0x08 || idx.shape.size() != 1)
    return kindMismatch(path, idx, "unsigned-byte labels of shape [N]");
  KILN_TRY(HostTensor tensor, createTensor(path, DType::I64, idx.shape));
  auto values = tensor.as<int64_t>();
  const uint8_t *data = idx.data.data();
  for (int64_t i = 0; i < idx.count; ++i)
    values[static_cast<size_t>(i)] = data[i];
  return tensor;
}

} // namespace kiln::io
