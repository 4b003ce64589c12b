// A 128-bit, non-cryptographic content hash: names kernel cache entries and
// checksums their files. Stable across runs, machines and builds.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace kiln::runtime {

/// Two independent 64-bit lanes. Collisions are not a correctness risk for the
/// kernel cache (an entry stores its full key and a read compares it); the hash
/// only has to spread keys and catch accidental corruption.
struct Hash128 {
  uint64_t high = 0, low = 0;

  /// 32 lower-case hex digits, high lane first.
  std::string hex() const;
  friend bool operator==(const Hash128 &, const Hash128 &) = default;
};

/// The hash of `bytes`; any change to a byte, the length or the order changes it.
Hash128 hashBytes(std::string_view bytes);

} // namespace kiln::runtime
