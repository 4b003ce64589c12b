// IDX parsing: the file is read whole (through zlib when it is gzipped), the
// header checked against the size, and the big-endian elements converted.
#include "frontend/io/Idx.h"

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

/// A parsed file: element type, dimensions and a view of the element bytes.
struct IdxFile {
  const IdxElementType *type = nullptr;
  std::vector<int64_t> shape;
  int64_t count = 0;
  std::vector<uint8_t> bytes; ///< The whole (decompressed) file.
  size_t dataOffset = 0;
};

std::unexpected<Error> formatError(const std::string &path, const std::string &what) {
  return makeError(ErrorCode::FormatError, fmt::format("{}: {}", path, what));
}

struct FileCloser {
  void operator()(std::FILE *file) const { std::fclose(file); }
};

Expected<std::vector<uint8_t>> readGzip(const std::string &path) {
  gzFile gz = gzopen(path.c_str(), "rb");
  if (!gz)
    return makeError(ErrorCode::IOError, fmt::format("cannot open {}: {}", path,
                                                     errno ? std::strerror(errno) : "zlib error"));
  std::unique_ptr<gzFile_s, int (*)(gzFile)> closer(gz, gzclose);
  gzbuffer(gz, 1 << 17);
  std::vector<uint8_t> out;
  constexpr unsigned kChunk = 1 << 20;
  while (true) {
    size_t used = out.size();
    out.resize(used + kChunk);
    int got = gzread(gz, out.data() + used, kChunk);
    if (got < 0) {
      int code = 0;
      const char *message = gzerror(gz, &code);
      return formatError(path, fmt::format("corrupt gzip data: {}", message));
    }
    out.resize(used + static_cast<size_t>(got));
    if (got == 0)
      break;
  }
  // A stream cut short reads as end of file; zlib records why.
  int code = Z_OK;
  const char *message = gzerror(gz, &code);
  if (code != Z_OK && code != Z_STREAM_END)
    return formatError(path, code == Z_BUF_ERROR
                                 ? std::string("truncated gzip stream (unexpected end of file)")
                                 : fmt::format("corrupt gzip data: {}", message));
  return out;
}

/// The file's bytes, gunzipped when it starts with the gzip magic 1f 8b.
Expected<std::vector<uint8_t>> readFileBytes(const std::string &path, bool &wasGzip) {
  std::unique_ptr<std::FILE, FileCloser> file(std::fopen(path.c_str(), "rb"));
  if (!file)
    return makeError(ErrorCode::IOError,
                     fmt::format("cannot open {}: {}", path, std::strerror(errno)));
  std::vector<uint8_t> bytes;
  uint8_t buffer[1 << 16];
  while (size_t got = std::fread(buffer, 1, sizeof(buffer), file.get())) {
    if (bytes.empty() && got >= 2 && buffer[0] == 0x1f && buffer[1] == 0x8b) {
      wasGzip = true;
      return readGzip(path);
    }
    bytes.insert(bytes.end(), buffer, buffer + got);
  }
  if (std::ferror(file.get()))
    return makeError(ErrorCode::IOError,
                     fmt::format("cannot read {}: {}", path, std::strerror(errno)));
  wasGzip = false;
  return bytes;
}

Expected<IdxFile> parseIdxFile(const std::string &path) {
  bool wasGzip = false;
  IdxFile idx;
  KILN_TRY(idx.bytes, readFileBytes(path, wasGzip));
  const std::vector<uint8_t> &bytes = idx.bytes;
  const char *sizeWord = wasGzip ? "decompressed size" : "file size";

  if (bytes.size() < 4)
    return formatError(path, fmt::format("truncated IDX header: expected at least 4 bytes, the "
                                         "{} is {} bytes",
                                         sizeWord, bytes.size()));
  if (bytes[0] != 0 || bytes[1] != 0)
    return formatError(path, fmt::format("bad magic: the file starts with 0x{:02x} 0x{:02x}, an "
                                         "IDX file starts with 0x00 0x00",
                                         bytes[0], bytes[1]));
  idx.type = findIdxType(bytes[2]);
  if (!idx.type)
    return formatError(path, fmt::format("unsupported IDX type code 0x{:02x} (expected 0x08, "
                                         "0x09, 0x0b, 0x0c, 0x0d or 0x0e)",
                                         bytes[2]));
  int rank = bytes[3];
  if (rank == 0)
    return formatError(path, "bad IDX header: the file declares 0 dimensions");
  idx.dataOffset = 4 + 4 * static_cast<size_t>(rank);
  if (bytes.size() < idx.dataOffset)
    return formatError(path, fmt::format("truncated IDX header: expected {} bytes for {} "
                                         "dimensions, the {} is {} bytes",
                                         idx.dataOffset, rank, sizeWord, bytes.size()));
  idx.count = 1;
  for (int d = 0; d < rank; ++d) {
    const uint8_t *p = bytes.data() + 4 + 4 * d;
    int64_t dim = (int64_t{p[0]} << 24) | (int64_t{p[1]} << 16) | (int64_t{p[2]} << 8) | p[3];
    idx.shape.push_back(dim);
    // Any count beyond 2^40 elements cannot be backed by a file we could read.
    if (dim != 0 && idx.count > (int64_t{1} << 40) / dim)
      return formatError(
          path, fmt::format("IDX dimensions [{}...] are too large", fmt::join(idx.shape, ",")));
    idx.count *= dim;
  }
  uint64_t expected = idx.dataOffset + static_cast<uint64_t>(idx.count) * idx.type->size;
  if (bytes.size() != expected)
    return formatError(
        path,
        fmt::format("{}: expected {} bytes ({} header + {} {} elements of shape [{}]), the "
                    "{} is {} bytes",
                    bytes.size() < expected ? "truncated data" : "trailing bytes after the data",
                    expected, idx.dataOffset, idx.count, idx.type->name, fmt::join(idx.shape, ","),
                    sizeWord, bytes.size()));
  return idx;
}

/// Element `i` of a parsed file, converted from big-endian; exact in fp64.
double loadElement(const IdxFile &idx, int64_t i) {
  const uint8_t *p = idx.bytes.data() + idx.dataOffset + i * idx.type->size;
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
  KILN_CHECK(false, "IDX type code passed validation but has no decoder");
}

std::unexpected<Error> kindMismatch(const std::string &path, const IdxFile &idx,
                                    const char *expected) {
  return formatError(path, fmt::format("expected {}, found {} elements of shape [{}]", expected,
                                       idx.type->name, fmt::join(idx.shape, ",")));
}

} // namespace

Expected<HostTensor> readIdx(const std::string &path) {
  KILN_TRY(IdxFile idx, parseIdxFile(path));
  HostTensor tensor(DType::F64, idx.shape);
  auto values = tensor.as<double>();
  for (int64_t i = 0; i < idx.count; ++i)
    values[static_cast<size_t>(i)] = loadElement(idx, i);
  return tensor;
}

Expected<HostTensor> readIdxImages(const std::string &path, bool normalize) {
  KILN_TRY(IdxFile idx, parseIdxFile(path));
  if (idx.type->code != 0x08 || idx.shape.size() != 3)
    return kindMismatch(path, idx, "unsigned-byte images of shape [N, H, W]");
  HostTensor tensor(DType::F32, {idx.shape[0], 1, idx.shape[1], idx.shape[2]});
  auto values = tensor.as<float>();
  // Dividing in fp64 and rounding once gives the correctly rounded v / 255.
  const double divisor = normalize ? 255.0 : 1.0;
  const uint8_t *data = idx.bytes.data() + idx.dataOffset;
  for (int64_t i = 0; i < idx.count; ++i)
    values[static_cast<size_t>(i)] = static_cast<float>(data[i] / divisor);
  return tensor;
}

Expected<HostTensor> readIdxLabels(const std::string &path) {
  KILN_TRY(IdxFile idx, parseIdxFile(path));
  if (idx.type->code != 0x08 || idx.shape.size() != 1)
    return kindMismatch(path, idx, "unsigned-byte labels of shape [N]");
  HostTensor tensor(DType::I64, idx.shape);
  auto values = tensor.as<int64_t>();
  const uint8_t *data = idx.bytes.data() + idx.dataOffset;
  for (int64_t i = 0; i < idx.count; ++i)
    values[static_cast<size_t>(i)] = data[i];
  return tensor;
}

} // namespace kiln::io
