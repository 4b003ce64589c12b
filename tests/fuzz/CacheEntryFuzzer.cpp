// libFuzzer target for kernel-cache entry files: any bytes must decode or be refused with a
// FormatError (never a crash or an allocation a length field asked for); an entry that
// decodes must re-encode to a file of the same size that decodes to the same key and
// sections, and must be refused under any other key. Each input is also tried with its
// checksum recomputed, so mutations reach the section decoder instead of the checksum check.
#include "runtime/cache/CacheEntryFile.h"
#include "Resealed.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

using kiln::runtime::CacheEntry;

[[noreturn]] void fail(const char *what, const std::string &detail) {
  std::fprintf(stderr, "cache entry fuzzer: %s\n%s\n", what, detail.c_str());
  std::abort();
}

void requireFormatError(const kiln::Error &error) {
  if (error.code() != kiln::ErrorCode::FormatError)
    fail("an error that is not a FormatError", error.str());
}

void check(std::string_view bytes) {
  auto key = kiln::runtime::readCacheEntryKey(bytes);
  if (!key) {
    requireFormatError(key.error());
    // Whatever the key asked for, a file that has none cannot decode.
    auto decoded = kiln::runtime::decodeCacheEntry(bytes, "");
    if (decoded)
      fail("decodeCacheEntry accepts what readCacheEntryKey refuses", key.error().str());
    requireFormatError(decoded.error());
    return;
  }
  auto entry = kiln::runtime::decodeCacheEntry(bytes, *key);
  if (!entry)
    fail("an entry does not decode under its own key", entry.error().str());
  auto foreign = kiln::runtime::decodeCacheEntry(bytes, *key + "x");
  if (foreign)
    fail("an entry decodes under another key", *key);
  requireFormatError(foreign.error());

  // Encoding sorts the sections, so the bytes may differ from the input's but not their size.
  std::string encoded = kiln::runtime::encodeCacheEntry(*key, *entry);
  if (encoded.size() != bytes.size())
    fail("re-encoding changed the size",
         std::to_string(bytes.size()) + " -> " + std::to_string(encoded.size()));
  auto again = kiln::runtime::decodeCacheEntry(encoded, *key);
  if (!again)
    fail("a re-encoded entry does not decode", again.error().str());
  if (*again != *entry)
    fail("re-encoding changed the sections", *key);
  if (kiln::runtime::encodeCacheEntry(*key, *again) != encoded)
    fail("encoding is not deterministic", *key);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char *>(data), size);
  check(bytes);
  if (std::optional<std::string> sealed = kiln::fuzz::resealed(bytes))
    check(*sealed);
  return 0;
}
