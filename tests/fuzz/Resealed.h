// Section files (kernel-cache entries, bundles) end in a checksum of the rest:
// a mutated input almost never passes it, so the fuzzers also try each input
// with the checksum recomputed, which lets mutations reach the decoders.
#pragma once

#include "runtime/cache/ContentHash.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kiln::fuzz {

/// `bytes` with its last 16 bytes replaced by the Hash128 of the others (as
/// runtime/cache/SectionFile writes it), or nullopt when it is too short.
inline std::optional<std::string> resealed(std::string_view bytes) {
  constexpr size_t kChecksumBytes = 16;
  if (bytes.size() <= kChecksumBytes)
    return std::nullopt;
  std::string sealed(bytes.substr(0, bytes.size() - kChecksumBytes));
  runtime::Hash128 checksum = runtime::hashBytes(sealed);
  for (uint64_t lane : {checksum.high, checksum.low})
    for (int i = 0; i < 8; ++i)
      sealed.push_back(static_cast<char>((lane >> (8 * i)) & 0xff));
  return sealed;
}

} // namespace kiln::fuzz
