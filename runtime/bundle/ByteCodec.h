// Little-endian writing and bounds-checked reading of the binary sections of
// an AOT bundle (the launch plan, tensors). The reader never trusts a length:
// a count or size larger than the bytes left is an error, not an allocation.
#pragma once

#include "support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kiln::runtime::bundle {

class ByteWriter {
public:
  void u8(uint8_t value) { out_.push_back(static_cast<char>(value)); }
  void u32(uint32_t value) { integer(value, 4); }
  void i32(int32_t value) { integer(static_cast<uint32_t>(value), 4); }
  void i64(int64_t value) { integer(static_cast<uint64_t>(value), 8); }
  /// A u64 length, then the bytes.
  void bytes(std::string_view value) {
    integer(value.size(), 8);
    out_ += value;
  }
  std::string take() { return std::move(out_); }

private:
  void integer(uint64_t value, int size) {
    for (int i = 0; i < size; ++i)
      out_.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
  }
  std::string out_;
};

/// Reads what ByteWriter wrote. The first failure is kept (naming `what` the
/// caller was reading) and every later read returns zero or empty, so a
/// decoder reads straight through and checks ok() where it matters.
class ByteReader {
public:
  ByteReader(std::string_view bytes, std::string_view section)
      : rest_(bytes), section_(section) {}

  uint8_t u8(const char *what) { return static_cast<uint8_t>(integer(1, what)); }
  uint32_t u32(const char *what) { return static_cast<uint32_t>(integer(4, what)); }
  int32_t i32(const char *what) { return static_cast<int32_t>(u32(what)); }
  int64_t i64(const char *what) { return static_cast<int64_t>(integer(8, what)); }
  std::string_view bytes(const char *what);
  /// A count of items that each take at least `minItemBytes` bytes: larger
  /// than what is left is an error (so no one allocates for it).
  uint32_t count(const char *what, size_t minItemBytes);

  /// Records a semantic error (an index out of range, a bad enum value).
  void fail(std::string message);
  bool ok() const { return !error_; }
  bool atEnd() const { return rest_.empty(); }
  /// The first error, as a FormatError naming the section.
  Error error() const;

private:
  uint64_t integer(int size, const char *what);
  std::string_view rest_;
  std::string_view section_;
  std::optional<std::string> error_;
};

} // namespace kiln::runtime::bundle
