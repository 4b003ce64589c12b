// The bytes of one kernel cache entry on disk: magic, format version, the full
// key, named sections and a checksum over all of it (docs/caching.md).
#pragma once

#include "support/Error.h"

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

namespace kiln::runtime {

/// What a cache entry holds: named byte payloads ("ptx", "cubin", "meta").
/// Payloads are bytes, not text; the names are sorted, so encoding is deterministic.
struct CacheEntry {
  std::map<std::string, std::string> sections;

  /// The payload named `name`, or nullptr.
  const std::string *section(std::string_view name) const;
  /// The sum of the payload sizes.
  int64_t payloadBytes() const;
  friend bool operator==(const CacheEntry &, const CacheEntry &) = default;
};

/// The first eight bytes of every entry file.
inline constexpr std::string_view kCacheEntryMagic = "KILNKC\r\n";
/// Bumped whenever the layout changes; an entry of another version is rebuilt.
inline constexpr uint32_t kCacheEntryFormatVersion = 1;

/// The largest entry file kiln reads (kernels are megabytes); a larger file is
/// not an entry kiln wrote and is rebuilt.
inline constexpr uint64_t kMaxCacheEntryBytes = uint64_t{1} << 30;

/// The file contents for `entry` under `key`.
std::string encodeCacheEntry(std::string_view key, const CacheEntry &entry);

/// The entry in `bytes`, or a FormatError saying why it cannot be trusted:
/// "not a kiln cache entry", "format version N (this kiln reads M)", "truncated",
/// "checksum mismatch", or "holds another key" when it is intact but was
/// written for a different key (a foreign entry or a hash collision).
Expected<CacheEntry> decodeCacheEntry(std::string_view bytes, std::string_view expectedKey);

/// The key stored in `bytes` after checking magic, version, structure and
/// checksum (for listing a cache without knowing its keys).
Expected<std::string> readCacheEntryKey(std::string_view bytes);

} // namespace kiln::runtime
