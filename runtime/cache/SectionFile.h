// The container both kiln file kinds share (kernel cache entries, AOT
// bundles): magic, format version, a header string, named byte sections, and
// a checksum over all of it. The reader checks every length before using it.
#pragma once

#include "support/Error.h"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace kiln::runtime {

/// What tells one kind of section file from another.
struct SectionFileFormat {
  std::string_view magic; ///< the first bytes of the file (8 for kiln's kinds)
  uint32_t version = 0;   ///< the only version this kiln reads and writes
  std::string_view kind;  ///< for errors: "kiln cache entry", "kiln bundle"
};

/// A decoded file whose sections point into the bytes it was decoded from
/// (no payload is copied), so those bytes must outlive it.
struct SectionFileView {
  std::string_view header;
  std::map<std::string, std::string_view, std::less<>> sections;

  /// The payload named `name`, or nullptr.
  const std::string_view *section(std::string_view name) const;
};

/// The file bytes. Sections are written in name order, so encoding is deterministic:
///   magic, u32 version, u64 header length, header, u32 section count,
///   per section (u32 name length, name, u64 payload length, payload),
///   16-byte Hash128 of everything before it. Integers are little-endian.
std::string encodeSectionFile(const SectionFileFormat &format, std::string_view header,
                              const std::map<std::string, std::string_view, std::less<>> &sections);

/// The file in `bytes`, or a FormatError saying why it cannot be trusted:
/// "not a <kind> (bad magic)", "truncated (shorter than the header)",
/// "format version N (this kiln reads M)", "truncated", "checksum mismatch",
/// "malformed (...)". Structure is checked before the checksum, so a short
/// file reads as truncated rather than as corrupt.
Expected<SectionFileView> decodeSectionFile(std::string_view bytes,
                                            const SectionFileFormat &format);

} // namespace kiln::runtime
