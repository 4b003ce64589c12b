// .npy files: a strict reader of the header dict and a deterministic writer.
#include "frontend/io/Npy.h"

#include "runtime/cache/AtomicFile.h"
#include "support/RegularFile.h"
#include "support/ShapeLimits.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <numeric>

namespace kiln::io {

namespace {

constexpr std::string_view kMagic = "\x93NUMPY";

std::unexpected<Error> formatError(std::string_view what, std::string message) {
  return std::unexpected(
      Error(ErrorCode::FormatError, fmt::format(".npy '{}': {}", what, message)));
}

// The header dict's three entries, parsed by a small scanner: the format allows exactly a
// Python literal dict of these keys, in any order.
struct NpyHeader {
  std::string descr;
  bool fortranOrder = false;
  std::vector<int64_t> shape;
};

class HeaderScanner {
public:
  explicit HeaderScanner(std::string_view text) : text_(text) {}

  void skipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' || text_[pos_] == '\t'))
      ++pos_;
  }
  bool consume(char c) {
    skipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool consumeWord(std::string_view word) {
    skipSpace();
    if (text_.substr(pos_, word.size()) == word) {
      pos_ += word.size();
      return true;
    }
    return false;
  }
  std::optional<std::string> string() {
    skipSpace();
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"'))
      return std::nullopt;
    char quote = text_[pos_++];
    size_t end = text_.find(quote, pos_);
    if (end == std::string_view::npos)
      return std::nullopt;
    std::string value(text_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return value;
  }
  std::optional<int64_t> integer() {
    skipSpace();
    int64_t value = 0;
    size_t start = pos_;
    while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      if (value > (INT64_MAX - 9) / 10)
        return std::nullopt;
      value = value * 10 + (text_[pos_++] - '0');
    }
    if (pos_ < text_.size() && text_[pos_] == 'L')
      ++pos_; // Python 2 longs
    return pos_ == start ? std::nullopt : std::optional<int64_t>(value);
  }
  bool atEnd() {
    skipSpace();
    return pos_ == text_.size();
  }
  size_t position() const { return pos_; }

private:
  std::string_view text_;
  size_t pos_ = 0;
};

Expected<NpyHeader> parseHeader(std::string_view text, std::string_view what) {
  HeaderScanner scan(text);
  NpyHeader header;
  bool haveDescr = false, haveOrder = false, haveShape = false;
  auto bad = [&](std::string_view expected) {
    return formatError(what, fmt::format("header {:?} at character {}: expected {}",
                                         std::string(text), scan.position(), expected));
  };
  if (!scan.consume('{'))
    return bad("'{'");
  while (!scan.consume('}')) {
    std::optional<std::string> key = scan.string();
    if (!key || !scan.consume(':'))
      return bad("a quoted key and ':'");
    if (*key == "descr" && !haveDescr) {
      auto descr = scan.string();
      if (!descr)
        return bad("a dtype string");
      header.descr = *descr;
      haveDescr = true;
    } else if (*key == "fortran_order" && !haveOrder) {
      if (scan.consumeWord("True"))
        header.fortranOrder = true;
      else if (!scan.consumeWord("False"))
        return bad("True or False");
      haveOrder = true;
    } else if (*key == "shape" && !haveShape) {
      if (!scan.consume('('))
        return bad("a shape tuple");
      while (!scan.consume(')')) {
        auto dim = scan.integer();
        if (!dim)
          return bad("a dimension");
        header.shape.push_back(*dim);
        if (!scan.consume(',')) {
          if (!scan.consume(')'))
            return bad("',' or ')'");
          break;
        }
      }
      haveShape = true;
    } else {
      return bad("one each of 'descr', 'fortran_order' and 'shape'");
    }
    if (!scan.consume(',')) {
      if (!scan.consume('}'))
        return bad("',' or '}'");
      break;
    }
  }
  if (!scan.atEnd())
    return bad("the end of the header");
  if (!haveDescr || !haveOrder || !haveShape)
    return formatError(what, "the header lacks one of 'descr', 'fortran_order' and 'shape'");
  return header;
}

struct DescrInfo {
  DType dtype;
  bool bigEndian;
};

Expected<DescrInfo> parseDescr(const std::string &descr, std::string_view what) {
  if (descr.size() < 3)
    return formatError(what, fmt::format("dtype '{}' is not a NumPy type string", descr));
  char order = descr[0];
  std::string_view kind = std::string_view(descr).substr(1);
  static const std::pair<std::string_view, DType> kKinds[] = {
      {"f4", DType::F32}, {"f8", DType::F64}, {"f2", DType::F16}, {"V2", DType::BF16},
      {"i8", DType::I64}, {"i4", DType::I32}, {"i1", DType::I8},  {"b1", DType::Bool}};
  for (const auto &[name, dtype] : kKinds)
    if (kind == name && (order == '<' || order == '>' || order == '|' || order == '='))
      return DescrInfo{dtype, order == '>'};
  return std::unexpected(
      Error(ErrorCode::Unsupported,
            fmt::format(".npy '{}': dtype '{}' is not one kiln reads (f8, f4, f2, i8, i4, "
                        "i1, b1, and V2 as bf16)",
                        what, descr)));
}

} // namespace

Expected<std::string> npyDescr(DType dtype) {
  switch (dtype) {
  case DType::F32: return std::string("<f4");
  case DType::F64: return std::string("<f8");
  case DType::F16: return std::string("<f2");
  case DType::BF16: return std::string("<V2");
  case DType::I64: return std::string("<i8");
  case DType::I32: return std::string("<i4");
  case DType::I8: return std::string("|i1");
  case DType::Bool: return std::string("|b1");
  default:
    return makeError(ErrorCode::Unsupported,
                     fmt::format("{} has no .npy dtype", dtypeName(dtype)));
  }
}

Expected<HostTensor> parseNpy(std::string_view bytes, std::string_view what) {
  if (bytes.size() < 10 || bytes.substr(0, kMagic.size()) != kMagic)
    return formatError(what, "not a .npy file (no \\x93NUMPY magic)");
  uint8_t major = static_cast<uint8_t>(bytes[6]);
  size_t lengthBytes = major == 1 ? 2 : major == 2 || major == 3 ? 4 : 0;
  if (lengthBytes == 0)
    return formatError(what, fmt::format("format version {}.{} is not 1.0 to 3.0", major,
                                         static_cast<uint8_t>(bytes[7])));
  if (bytes.size() < 8 + lengthBytes)
    return formatError(what, "truncated in the header length");
  uint64_t headerLength = 0;
  for (size_t i = 0; i < lengthBytes; ++i)
    headerLength |= static_cast<uint64_t>(static_cast<uint8_t>(bytes[8 + i])) << (8 * i);
  size_t dataStart = 8 + lengthBytes;
  if (headerLength > bytes.size() - dataStart)
    return formatError(what, fmt::format("the header claims {} bytes, the file has {} after it",
                                         headerLength, bytes.size() - dataStart));
  KILN_TRY(NpyHeader header, parseHeader(bytes.substr(dataStart, headerLength), what));
  dataStart += headerLength;
  KILN_TRY(DescrInfo descr, parseDescr(header.descr, what));
  // The bytes the shape needs are compared with the bytes present before anything is
  // allocated: a header can claim gigabytes in a file of a few bytes. (A shape past 2^53
  // elements has no count here; create() refuses it without allocating.)
  std::optional<int64_t> count = checkedNumElements(header.shape);
  uint64_t present = bytes.size() - dataStart;
  if (count) {
    uint64_t needed = static_cast<uint64_t>(*count) * dtypeByteSize(descr.dtype);
    if (needed != present)
      return formatError(what, fmt::format("{}[{}] needs {} data bytes, the file has {}",
                                           dtypeName(descr.dtype), fmt::join(header.shape, ","),
                                           needed, present));
  }
  auto created = HostTensor::create(descr.dtype, header.shape);
  if (!created)
    return formatError(what, created.error().message());
  HostTensor tensor = std::move(*created);
  if (tensor.byteSize() > 0)
    std::memcpy(tensor.bytes().data(), bytes.data() + dataStart, tensor.byteSize());
  int width = dtypeByteSize(descr.dtype);
  if (descr.bigEndian && width > 1)
    for (size_t i = 0; i < tensor.byteSize(); i += static_cast<size_t>(width))
      std::reverse(tensor.bytes().begin() + i, tensor.bytes().begin() + i + width);
  if (descr.dtype == DType::Bool)
    for (uint8_t &byte : tensor.bytes())
      byte = byte != 0;
  if (header.fortranOrder && tensor.rank() > 1) {
    // Column-major data is the row-major data of the reversed shape: transpose it back.
    std::vector<int64_t> reversed(header.shape.rbegin(), header.shape.rend());
    HostTensor columnMajor(descr.dtype, reversed);
    std::memcpy(columnMajor.bytes().data(), tensor.bytes().data(), tensor.byteSize());
    int64_t rank = tensor.rank();
    std::vector<int64_t> index(static_cast<size_t>(rank), 0);
    for (int64_t flat = 0; flat < tensor.numElements(); ++flat) {
      // `index` is the row-major position of `flat` in the result; its reverse is the
      // position in columnMajor.
      int64_t source = 0;
      for (int64_t d = 0; d < rank; ++d)
        source = source * reversed[static_cast<size_t>(d)] + index[static_cast<size_t>(rank - 1 - d)];
      std::memcpy(tensor.bytes().data() + flat * width,
                  columnMajor.bytes().data() + source * width, static_cast<size_t>(width));
      for (int64_t d = rank - 1; d >= 0; --d) {
        if (++index[static_cast<size_t>(d)] < header.shape[static_cast<size_t>(d)])
          break;
        index[static_cast<size_t>(d)] = 0;
      }
    }
  }
  return tensor;
}

Expected<std::string> serializeNpy(const HostTensor &tensor) {
  KILN_TRY(std::string descr, npyDescr(tensor.dtype()));
  std::string shape;
  for (int64_t dim : tensor.shape())
    shape += fmt::format("{}, ", dim);
  if (tensor.rank() > 1)
    shape.resize(shape.size() - 2);
  else if (tensor.rank() == 1)
    shape.pop_back();
  std::string header =
      fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': ({}), }}", descr, shape);
  // The data starts 64-byte aligned; the header ends in '\n'.
  size_t lengthBytes = header.size() + 1 + 10 > 65535 ? 4 : 2;
  size_t total = kMagic.size() + 2 + lengthBytes + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::string bytes(kMagic);
  bytes += static_cast<char>(lengthBytes == 2 ? 1 : 2);
  bytes += '\0';
  for (size_t i = 0; i < lengthBytes; ++i)
    bytes += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  bytes += header;
  bytes.append(reinterpret_cast<const char *>(tensor.bytes().data()), tensor.byteSize());
  return bytes;
}

Expected<HostTensor> loadNpy(const std::string &path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    return makeError(ErrorCode::IOError,
                     fmt::format("cannot read .npy '{}': missing or not a regular file", path));
  KILN_TRY(std::string bytes, readRegularFile(path, ".npy file", kMaxNpyBytes));
  return parseNpy(bytes, path);
}

Expected<void> saveNpy(const std::string &path, const HostTensor &tensor) {
  KILN_TRY(std::string bytes, serializeNpy(tensor));
  return runtime::replaceFile(path, bytes, ".npy");
}

} // namespace kiln::io
