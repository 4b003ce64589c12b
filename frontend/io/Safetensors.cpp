// safetensors save (deterministic bytes, atomic rename) and load (strict
// header validation, then one read per tensor straight into its HostTensor).
#include "frontend/io/Safetensors.h"

#include "ir/graph/TensorType.h"
#include "runtime/cache/AtomicFile.h"
#include "support/Json.h"
#include "support/RegularFile.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <functional>
#include <fmt/format.h>
#include <tuple>
#include <unistd.h>

namespace kiln::io {

namespace {

// X-macro: kiln dtype, safetensors name.
#define KILN_SAFETENSORS_DTYPES(X)                                                                 \
  X(F64, "F64")                                                                                    \
  X(F32, "F32")                                                                                    \
  X(F16, "F16")                                                                                    \
  X(BF16, "BF16")                                                                                  \
  X(F8E4M3, "F8_E4M3")                                                                             \
  X(F8E5M2, "F8_E5M2")                                                                             \
  X(I64, "I64")                                                                                    \
  X(I32, "I32")                                                                                    \
  X(I8, "I8")                                                                                      \
  X(Bool, "BOOL")

constexpr std::string_view kMetadataKey = "__metadata__";
/// The reference implementation's limit; it also bounds what a corrupt length
/// field can make us allocate.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

std::unexpected<Error> formatError(const std::string &path, const std::string &what) {
  return makeError(ErrorCode::FormatError, fmt::format("{}: {}", path, what));
}

std::unexpected<Error> ioError(const std::string &what, const std::string &path, int errorNumber) {
  return makeError(ErrorCode::IOError,
                   fmt::format("{} {}: {}", what, path, std::strerror(errorNumber)));
}

/// Reads exactly `size` bytes at `offset`; returns 0, an errno value, or -1
/// when the file ends first.
int readAllAt(int fd, void *data, size_t size, uint64_t offset) {
  auto *bytes = static_cast<uint8_t *>(data);
  while (size > 0) {
    ssize_t got = ::pread(fd, bytes, size, static_cast<off_t>(offset));
    if (got < 0) {
      if (errno == EINTR)
        continue;
      return errno;
    }
    if (got == 0)
      return -1;
    bytes += got;
    size -= static_cast<size_t>(got);
    offset += static_cast<uint64_t>(got);
  }
  return 0;
}

/// The header is JSON, which must be UTF-8: a name with other bytes would make
/// a file that other readers reject.
Expected<void> requireUtf8(const std::string &path, std::string_view what, std::string_view text) {
  std::optional<size_t> bad = json::invalidUtf8Offset(text);
  if (!bad)
    return {};
  std::string shown;
  for (char c : text)
    shown += static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f
                 ? fmt::format("\\x{:02x}", static_cast<unsigned char>(c))
                 : std::string(1, c);
  return makeError(ErrorCode::InvalidArgument,
                   fmt::format("cannot save {}: {} \"{}\" is not UTF-8 (byte {} is not part of a "
                               "UTF-8 character); a safetensors header is JSON, which must be UTF-8",
                               path, what, shown, *bad));
}

std::string buildHeader(const TensorMap &tensors, const SafetensorsMetadata &metadata) {
  std::string header = "{";
  uint64_t offset = 0;
  bool first = true;
  if (!metadata.empty()) {
    header += json::quote(kMetadataKey) + ":{";
    for (auto item = metadata.begin(); item != metadata.end(); ++item)
      header += (item == metadata.begin() ? "" : ",") + json::quote(item->first) + ":" +
                json::quote(item->second);
    header += "}";
    first = false;
  }
  for (const auto &[name, tensor] : tensors) {
    if (!first)
      header += ",";
    first = false;
    uint64_t end = offset + tensor.byteSize();
    header += fmt::format("{}:{{\"dtype\":\"{}\",\"shape\":[{}],\"data_offsets\":[{},{}]}}",
                          json::quote(name), safetensorsDTypeName(tensor.dtype()),
                          fmt::join(tensor.shape(), ","), offset, end);
    offset = end;
  }
  header += "}";
  // Pad with spaces (valid JSON whitespace) so the data starts 8-byte aligned.
  header.append((8 - header.size() % 8) % 8, ' ');
  return header;
}

/// Writes the file's bytes to `fd`; on failure, the errno of the call that failed.
int writeFileContents(int fd, const std::string &header, const TensorMap &tensors) {
  uint8_t lengthBytes[8];
  uint64_t length = header.size();
  for (int i = 0; i < 8; ++i)
    lengthBytes[i] = static_cast<uint8_t>(length >> (8 * i));
  auto write = [fd](const void *data, size_t size) {
    return runtime::writeAll(fd, std::string_view(static_cast<const char *>(data), size));
  };
  if (!write(lengthBytes, sizeof(lengthBytes)) || !write(header.data(), header.size()))
    return errno;
  for (const auto &[name, tensor] : tensors)
    if (!write(tensor.bytes().data(), tensor.byteSize()))
      return errno;
  return 0;
}

/// One tensor entry of a header, validated except for how its byte range
/// relates to the other tensors'.
struct TensorEntry {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  uint64_t begin;
  uint64_t end;
};

std::string supportedDTypeList() {
  std::string names;
#define KILN_SAFETENSORS_LIST(kilnName, stName) names += names.empty() ? stName : ", " stName;
  KILN_SAFETENSORS_DTYPES(KILN_SAFETENSORS_LIST)
#undef KILN_SAFETENSORS_LIST
  return names;
}

/// A non-negative integer, read exactly (an offset may pass 2^53).
bool isCount(const json::Value &value) {
  return value.kind == json::Value::Kind::Number && value.integral && value.integer >= 0;
}

/// Validates one tensor's header object. Byte positions in messages count
/// from the start of the JSON header (file offset 8).
Expected<TensorEntry> parseTensorEntry(const std::string &path, const json::Member &member,
                                       uint64_t dataSize) {
  const std::string &name = member.key;
  const json::Value &value = member.value;
  auto fail = [&](const std::string &what, size_t jsonOffset) {
    return formatError(
        path, fmt::format("tensor '{}': {} at byte {} of the header", name, what, jsonOffset));
  };
  if (value.kind != json::Value::Kind::Object)
    return fail(fmt::format("expected an object, found {}", json::kindName(value.kind)),
                value.offset);

  // json::parse refuses a field given twice.
  const json::Value *dtypeValue = nullptr;
  const json::Value *shapeValue = nullptr;
  const json::Value *offsetsValue = nullptr;
  for (const json::Member &field : value.members) {
    const json::Value **slot = field.key == "dtype"          ? &dtypeValue
                               : field.key == "shape"        ? &shapeValue
                               : field.key == "data_offsets" ? &offsetsValue
                                                             : nullptr;
    if (!slot)
      return fail(fmt::format("unknown field \"{}\"", field.key), field.keyOffset);
    *slot = &field.value;
  }
  for (auto [present, fieldName] : {std::pair{dtypeValue, "dtype"}, std::pair{shapeValue, "shape"},
                                    std::pair{offsetsValue, "data_offsets"}}) {
    if (!present)
      return fail(fmt::format("missing field \"{}\"", fieldName), value.offset);
  }

  TensorEntry entry;
  entry.name = name;
  if (dtypeValue->kind != json::Value::Kind::String)
    return fail("\"dtype\" must be a string", dtypeValue->offset);
  std::optional<DType> dtype = parseSafetensorsDType(dtypeValue->string);
  if (!dtype)
    return fail(fmt::format("unknown dtype \"{}\" (kiln reads {})", dtypeValue->string,
                            supportedDTypeList()),
                dtypeValue->offset);
  entry.dtype = *dtype;

  if (shapeValue->kind != json::Value::Kind::Array)
    return fail("\"shape\" must be an array of integers", shapeValue->offset);
  // The element count must fit the data section, which bounds every product.
  uint64_t elementCount = 1;
  bool countOverflows = false;
  for (const json::Value &dim : shapeValue->elements) {
    if (!isCount(dim))
      return fail("\"shape\" must hold non-negative integers", dim.offset);
    entry.shape.push_back(dim.integer);
    auto extent = static_cast<uint64_t>(dim.integer);
    if (extent != 0 && elementCount > UINT64_MAX / 16 / extent)
      countOverflows = true;
    else
      elementCount *= extent;
  }
  // Even with a zero dimension (and so no bytes), the others must form a
  // shape the IR accepts: their product is bounded by 2^53.
  if (!ir::checkedNumElements(entry.shape))
    return fail(
        fmt::format("\"shape\" [{}] has more than 2^53 elements", fmt::join(entry.shape, ",")),
        shapeValue->offset);

  if (offsetsValue->kind != json::Value::Kind::Array || offsetsValue->elements.size() != 2 ||
      !isCount(offsetsValue->elements[0]) || !isCount(offsetsValue->elements[1]))
    return fail("\"data_offsets\" must be [begin, end] with non-negative integers",
                offsetsValue->offset);
  entry.begin = static_cast<uint64_t>(offsetsValue->elements[0].integer);
  entry.end = static_cast<uint64_t>(offsetsValue->elements[1].integer);
  std::string range = fmt::format("data_offsets [{}, {}]", entry.begin, entry.end);
  if (entry.end < entry.begin)
    return fail(fmt::format("{} end before begin", range), offsetsValue->offset);
  if (entry.end > dataSize)
    return fail(fmt::format("{} out of range of the {}-byte data section (file truncated?)", range,
                            dataSize),
                offsetsValue->offset);
  std::string typeText = fmt::format("{}[{}]", dtypeValue->string, fmt::join(entry.shape, ","));
  uint64_t expectedBytes = elementCount * static_cast<uint64_t>(dtypeByteSize(entry.dtype));
  if (countOverflows || entry.end - entry.begin != expectedBytes)
    return fail(fmt::format("{} span {} bytes but {} needs {}", range, entry.end - entry.begin,
                            typeText,
                            countOverflows ? std::string("more than fits in a file")
                                           : fmt::format("{} bytes", expectedBytes)),
                offsetsValue->offset);
  return entry;
}

Expected<SafetensorsMetadata> readMetadata(const std::string &path, const json::Value &metadata) {
  if (metadata.kind != json::Value::Kind::Object)
    return formatError(path,
                       fmt::format("\"__metadata__\" must be an object at byte {} of the header",
                                   metadata.offset));
  SafetensorsMetadata pairs;
  for (const json::Member &item : metadata.members) {
    if (item.value.kind != json::Value::Kind::String)
      return formatError(path,
                         fmt::format("\"__metadata__\" value of \"{}\" must be a string, "
                                     "found {} at byte {} of the header",
                                     item.key, json::kindName(item.value.kind), item.value.offset));
    pairs.emplace(item.key, item.value.string); // json::parse refuses a key given twice
  }
  return pairs;
}

/// The byte ranges must tile the data section exactly: no overlap (two
/// tensors aliasing), no hole and no tail (bytes no tensor owns).
Expected<void> checkTiling(const std::string &path, std::vector<const TensorEntry *> entries,
                           uint64_t dataSize) {
  std::sort(entries.begin(), entries.end(), [](const TensorEntry *a, const TensorEntry *b) {
    return std::tie(a->begin, a->end, a->name) < std::tie(b->begin, b->end, b->name);
  });
  uint64_t covered = 0;
  const TensorEntry *previous = nullptr;
  for (const TensorEntry *entry : entries) {
    if (entry->begin < covered)
      return formatError(path, fmt::format("tensors '{}' (bytes [{}, {})) and '{}' (bytes [{}, "
                                           "{})) overlap in the data section",
                                           previous->name, previous->begin, previous->end,
                                           entry->name, entry->begin, entry->end));
    if (entry->begin > covered)
      return formatError(path, fmt::format("bytes [{}, {}) of the data section belong to no "
                                           "tensor (a hole before '{}')",
                                           covered, entry->begin, entry->name));
    covered = entry->end;
    previous = entry;
  }
  if (covered != dataSize)
    return formatError(path, fmt::format("bytes [{}, {}) at the end of the data section belong "
                                         "to no tensor",
                                         covered, dataSize));
  return {};
}

/// The checks and reads of a file of `fileSize` bytes; `readAt` reads like
/// readAllAt (0, an errno value, or -1 past the end).
Expected<SafetensorsContents>
parseContents(const std::string &path, uint64_t fileSize,
              const std::function<int(void *, size_t, uint64_t)> &readAt) {
  if (fileSize < 8)
    return formatError(path, fmt::format("file is truncated: {} bytes, too short for the 8-byte "
                                         "header length",
                                         fileSize));
  uint8_t lengthBytes[8];
  if (int err = readAt(lengthBytes, 8, 0))
    return err < 0 ? formatError(path, "file is truncated while reading the header length")
                   : ioError("cannot read", path, err);
  uint64_t headerSize = 0;
  for (int i = 7; i >= 0; --i)
    headerSize = (headerSize << 8) | lengthBytes[i];
  if (headerSize > fileSize - 8)
    return formatError(path, fmt::format("header length {} is beyond the end of the file ({} bytes "
                                         "after the length field; file truncated?)",
                                         headerSize, fileSize - 8));
  if (headerSize > kMaxHeaderBytes)
    return formatError(path, fmt::format("header length {} exceeds the {}-byte limit", headerSize,
                                         kMaxHeaderBytes));

  std::string headerText(static_cast<size_t>(headerSize), '\0');
  if (int err = readAt(headerText.data(), headerText.size(), 8))
    return err < 0 ? formatError(path, "file is truncated while reading the header")
                   : ioError("cannot read", path, err);
  if (headerText.empty() || headerText[0] != '{')
    return formatError(path, "bad JSON in header: expected '{' at byte 0 of the header");
  // JSON is UTF-8, and saveSafetensors refuses other names, so a file kiln loads saves back.
  if (std::optional<size_t> bad = json::invalidUtf8Offset(headerText))
    return formatError(path, fmt::format("header is not UTF-8: byte {} of the header is not part "
                                         "of a UTF-8 character (a safetensors header is JSON)",
                                         *bad));
  // Depth 3 holds every valid header: root, tensor, shape, dimension.
  auto parsed = json::parse(headerText, path, 3);
  if (!parsed) {
    const std::optional<Location> &where = parsed.error().location();
    if (!where) // every json::parse error is located; say so plainly if one ever is not
      return formatError(path, "bad JSON in header: " + parsed.error().message());
    return formatError(path, fmt::format("bad JSON in header: {} at byte {} of the header",
                                         parsed.error().message(),
                                         json::byteOffsetOf(headerText, *where)));
  }
  const json::Value &root = *parsed;

  uint64_t dataStart = 8 + headerSize;
  uint64_t dataSize = fileSize - dataStart;
  SafetensorsContents contents;
  std::vector<TensorEntry> entries;
  for (const json::Member &member : root.members) { // no name twice: json::parse refuses it
    if (member.key == kMetadataKey) {
      KILN_TRY(contents.metadata, readMetadata(path, member.value));
      continue;
    }
    // saveSafetensors refuses an empty name, so a file kiln loads can always be saved back.
    if (member.key.empty())
      return formatError(path, fmt::format("empty tensor name at byte {} of the header",
                                           member.keyOffset));
    KILN_TRY(TensorEntry entry, parseTensorEntry(path, member, dataSize));
    entries.push_back(std::move(entry));
  }
  std::vector<const TensorEntry *> byOffset;
  for (const TensorEntry &entry : entries)
    byOffset.push_back(&entry);
  KILN_TRY_VOID(checkTiling(path, byOffset, dataSize));

  for (const TensorEntry &entry : entries) {
    // The shape was checked; the allocation itself can still fail.
    auto created = HostTensor::create(entry.dtype, entry.shape);
    if (!created)
      return makeError(created.error().code(), fmt::format("{}: tensor '{}': {}", path, entry.name,
                                                           created.error().message()));
    HostTensor tensor = std::move(*created);
    if (int err = readAt(tensor.bytes().data(), tensor.byteSize(),
                            dataStart + entry.begin))
      return err < 0 ? formatError(path,
                                   fmt::format("file is truncated inside tensor '{}'", entry.name))
                     : ioError("cannot read", path, err);
    contents.tensors.emplace(entry.name, std::move(tensor));
  }
  return contents;
}

} // namespace

std::string_view safetensorsDTypeName(DType type) {
  switch (type) {
#define KILN_SAFETENSORS_NAME(kilnName, stName)                                                    \
  case DType::kilnName: return stName;
    KILN_SAFETENSORS_DTYPES(KILN_SAFETENSORS_NAME)
#undef KILN_SAFETENSORS_NAME
  }
  KILN_UNREACHABLE("dtype missing from the safetensors table");
}

std::optional<DType> parseSafetensorsDType(std::string_view name) {
#define KILN_SAFETENSORS_PARSE(kilnName, stName)                                                   \
  if (name == stName)                                                                              \
    return DType::kilnName;
  KILN_SAFETENSORS_DTYPES(KILN_SAFETENSORS_PARSE)
#undef KILN_SAFETENSORS_PARSE
  return std::nullopt;
}

Expected<void> saveSafetensors(const std::string &path, const TensorMap &tensors,
                               const SafetensorsMetadata &metadata) {
  for (const auto &[name, tensor] : tensors) {
    if (name.empty() || name == kMetadataKey)
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("cannot save {}: tensor name \"{}\" is {}", path, name,
                                   name.empty() ? "empty" : "reserved by safetensors"));
    KILN_TRY_VOID(requireUtf8(path, "tensor name", name));
    KILN_CHECK(static_cast<int64_t>(tensor.byteSize()) ==
                   tensor.numElements() * dtypeByteSize(tensor.dtype()),
               "HostTensor byte size disagrees with its type " + tensor.typeStr());
  }
  for (const auto &[key, value] : metadata) {
    KILN_TRY_VOID(requireUtf8(path, "metadata key", key));
    KILN_TRY_VOID(requireUtf8(path, "metadata value", value));
  }
  std::string header = buildHeader(tensors, metadata);
  return runtime::replaceFileWith(path, "safetensors file", [&](int fd) {
    return writeFileContents(fd, header, tensors);
  });
}

Expected<TensorMap> loadSafetensors(const std::string &path) {
  KILN_TRY(SafetensorsContents contents, readSafetensors(path));
  return std::move(contents.tensors);
}

Expected<SafetensorsContents> readSafetensors(const std::string &path) {
  KILN_TRY(RegularFile file, openRegularFile(path, "safetensors file"));
  auto readAt = [&](void *data, size_t size, uint64_t offset) {
    return readAllAt(file.descriptor.get(), data, size, offset);
  };
  return parseContents(path, file.size, readAt);
}

Expected<SafetensorsContents> parseSafetensors(std::string_view bytes, const std::string &name) {
  auto readAt = [&](void *data, size_t size, uint64_t offset) {
    if (offset > bytes.size() || size > bytes.size() - offset)
      return -1;
    std::memcpy(data, bytes.data() + offset, size);
    return 0;
  };
  return parseContents(name, bytes.size(), readAt);
}

} // namespace kiln::io
