// Bounds-checked reads for the bundle's binary sections.
#include "runtime/bundle/ByteCodec.h"

#include <fmt/format.h>

namespace kiln::runtime::bundle {

uint64_t ByteReader::integer(int size, const char *what) {
  if (error_)
    return 0;
  if (rest_.size() < static_cast<size_t>(size)) {
    fail(fmt::format("truncated while reading {}", what));
    return 0;
  }
  uint64_t value = 0;
  for (int i = size - 1; i >= 0; --i)
    value = (value << 8) | static_cast<unsigned char>(rest_[static_cast<size_t>(i)]);
  rest_.remove_prefix(static_cast<size_t>(size));
  return value;
}

std::string_view ByteReader::bytes(const char *what) {
  uint64_t size = integer(8, what);
  if (error_)
    return {};
  if (size > rest_.size()) {
    fail(fmt::format("{} claims {} bytes but only {} remain", what, size, rest_.size()));
    return {};
  }
  std::string_view taken = rest_.substr(0, size);
  rest_.remove_prefix(size);
  return taken;
}

uint32_t ByteReader::count(const char *what, size_t minItemBytes) {
  uint32_t value = u32(what);
  if (error_)
    return 0;
  if (static_cast<uint64_t>(value) * minItemBytes > rest_.size()) {
    fail(fmt::format("{} is {}, more than the {} bytes left can hold", what, value, rest_.size()));
    return 0;
  }
  return value;
}

void ByteReader::fail(std::string message) {
  if (!error_)
    error_ = std::move(message);
  rest_ = {};
}

Error ByteReader::error() const {
  return Error(ErrorCode::FormatError,
               fmt::format("section '{}': {}", section_, error_.value_or("malformed")));
}

} // namespace kiln::runtime::bundle
