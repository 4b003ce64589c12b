// The 128-bit content hash: two 64-bit multiply-rotate lanes with different
// seeds, constants and rotations, each finished with a full avalanche.
#include "runtime/cache/ContentHash.h"

#include <fmt/format.h>

#include <bit>
#include <cstring>

namespace kiln::runtime {
namespace {

/// One lane's constants. Odd multipliers keep each step a bijection on the state.
struct Lane {
  uint64_t seed, multiplyWord, multiplyState;
  int rotateWord, rotateState;
};

constexpr Lane kHighLane = {0x243f6a8885a308d3ull, 0x9e3779b97f4a7c15ull, 0xbf58476d1ce4e5b9ull,
                            31, 27};
constexpr Lane kLowLane = {0x13198a2e03707344ull, 0xc2b2ae3d27d4eb4full, 0x94d049bb133111ebull,
                           29, 23};

/// Mixes every input bit into every output bit (a finalizer in the style of
/// splitmix64, with this file's own constants).
uint64_t avalanche(uint64_t x) {
  x ^= x >> 32;
  x *= 0xd6e8feb86659fd93ull;
  x ^= x >> 29;
  x *= 0xa0761d6478bd642full;
  x ^= x >> 32;
  return x;
}

/// Reads 8 bytes little-endian, so the hash does not depend on the host's byte order.
uint64_t loadWord(const unsigned char *p) {
  uint64_t word = 0;
  for (int i = 7; i >= 0; --i)
    word = (word << 8) | p[i];
  return word;
}

uint64_t hashLane(std::string_view bytes, const Lane &lane) {
  const auto *data = reinterpret_cast<const unsigned char *>(bytes.data());
  size_t size = bytes.size();
  uint64_t state = lane.seed ^ (static_cast<uint64_t>(size) * lane.multiplyState);
  size_t at = 0;
  auto absorb = [&](uint64_t word) {
    word *= lane.multiplyWord;
    word = std::rotl(word, lane.rotateWord);
    state ^= word;
    state = std::rotl(state, lane.rotateState) * lane.multiplyState + lane.seed;
  };
  for (; at + 8 <= size; at += 8)
    absorb(loadWord(data + at));
  // The tail, zero-padded; the length mixed in above keeps "a" and "a\0" apart.
  if (at < size) {
    unsigned char tail[8] = {};
    std::memcpy(tail, data + at, size - at);
    absorb(loadWord(tail));
  }
  return avalanche(state ^ lane.multiplyWord);
}

} // namespace

std::string Hash128::hex() const { return fmt::format("{:016x}{:016x}", high, low); }

Hash128 hashBytes(std::string_view bytes) {
  return Hash128{hashLane(bytes, kHighLane), hashLane(bytes, kLowLane)};
}

} // namespace kiln::runtime
