// libFuzzer target for the IDX reader (Fashion-MNIST's format), plain and gzipped: any file
// must read or be refused with a FormatError, never a crash, an abort, a hang or an
// allocation the header merely asked for. The image and label readers must agree with the
// generic reader, and a plain input gzipped here must read exactly as the plain one does.
#include "MemoryFile.h"
#include "frontend/io/Idx.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <zlib.h>

namespace {

using kiln::Expected;
using kiln::HostTensor;

[[noreturn]] void fail(const char *what, const std::string &detail) {
  std::fprintf(stderr, "idx fuzzer: %s\n%s\n", what, detail.c_str());
  std::abort();
}

void requireFormatError(const kiln::Error &error) {
  if (error.code() != kiln::ErrorCode::FormatError)
    fail("an error that is not a FormatError", error.str());
}

bool sameTensor(const HostTensor &a, const HostTensor &b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::equal(a.bytes().begin(), a.bytes().end(), b.bytes().begin(), b.bytes().end());
}

/// `bytes` as a gzip stream (what `gzip` writes).
std::string gzip(std::string_view bytes) {
  z_stream stream{};
  if (deflateInit2(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
                   Z_DEFAULT_STRATEGY) != Z_OK)
    fail("deflateInit2 failed", "");
  std::string out(deflateBound(&stream, bytes.size()), '\0');
  stream.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(bytes.data()));
  stream.avail_in = static_cast<uInt>(bytes.size());
  stream.next_out = reinterpret_cast<Bytef *>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  if (deflate(&stream, Z_FINISH) != Z_STREAM_END)
    fail("deflate did not finish", "");
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

/// The generic reader's result, with the image and label readers checked against it.
Expected<HostTensor> readChecked(const std::string &path) {
  auto plain = kiln::io::readIdx(path);
  if (!plain)
    requireFormatError(plain.error());
  auto images = kiln::io::readIdxImages(path, /*normalize=*/false);
  if (images) {
    // [N, H, W] bytes 0..255 become [N, 1, H, W] floats of the same values.
    if (!plain)
      fail("images read where the generic reader fails", plain.error().str());
    const auto &shape = plain->shape();
    if (shape.size() != 3 || images->shape() != std::vector<int64_t>{shape[0], 1, shape[1], shape[2]})
      fail("image shape disagrees", images->typeStr() + " vs " + plain->typeStr());
    for (int64_t i = 0; i < plain->numElements(); ++i)
      if (images->getDouble(i) != plain->getDouble(i))
        fail("image values disagree", images->typeStr());
  } else {
    requireFormatError(images.error());
  }
  auto labels = kiln::io::readIdxLabels(path);
  if (labels) {
    if (!plain)
      fail("labels read where the generic reader fails", plain.error().str());
    if (labels->shape() != plain->shape() || labels->toDoubles() != plain->toDoubles())
      fail("labels disagree", labels->typeStr() + " vs " + plain->typeStr());
  } else {
    requireFormatError(labels.error());
  }
  return plain;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static kiln::fuzz::MemoryFile input;
  std::string_view bytes(reinterpret_cast<const char *>(data), size);
  input.assign(bytes);
  auto plain = readChecked(input.path());

  // gzip magic: the input is already compressed; gzipping it again proves nothing new.
  if (bytes.starts_with("\x1f\x8b"))
    return 0;
  input.assign(gzip(bytes));
  auto zipped = readChecked(input.path());
  if (plain.has_value() != zipped.has_value())
    fail("gzipping the file changed whether it reads",
         plain ? zipped.error().str() : plain.error().str());
  if (plain && !sameTensor(*plain, *zipped))
    fail("gzipping the file changed its values", plain->typeStr() + " vs " + zipped->typeStr());
  return 0;
}
