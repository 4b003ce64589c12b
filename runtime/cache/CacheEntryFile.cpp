// Encoding and checking of kernel cache entry files. Every length is checked
// against the bytes present before it is used, so a truncated or corrupt file
// is reported, never read past its end.
#include "runtime/cache/CacheEntryFile.h"

#include "runtime/cache/ContentHash.h"

#include <fmt/format.h>

namespace kiln::runtime {
namespace {

constexpr size_t kChecksumBytes = 16;

void appendInteger(std::string &out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

void appendChecksum(std::string &out, const Hash128 &checksum) {
  appendInteger(out, checksum.high, 8);
  appendInteger(out, checksum.low, 8);
}

/// Reads little-endian integers and length-prefixed strings off the front of
/// a byte string; any read past the end sets `truncated`.
class Reader {
public:
  explicit Reader(std::string_view bytes) : rest_(bytes) {}

  uint64_t integer(int bytes) {
    if (rest_.size() < static_cast<size_t>(bytes)) {
      truncated_ = true;
      rest_ = {};
      return 0;
    }
    uint64_t value = 0;
    for (int i = bytes - 1; i >= 0; --i)
      value = (value << 8) | static_cast<unsigned char>(rest_[i]);
    rest_.remove_prefix(bytes);
    return value;
  }
  std::string_view bytes(uint64_t count) {
    if (rest_.size() < count) {
      truncated_ = true;
      rest_ = {};
      return {};
    }
    std::string_view taken = rest_.substr(0, count);
    rest_.remove_prefix(count);
    return taken;
  }
  bool truncated() const { return truncated_; }
  size_t remaining() const { return rest_.size(); }

private:
  std::string_view rest_;
  bool truncated_ = false;
};

/// The key and sections of `bytes`, checked for magic, version, structure and checksum.
Expected<std::pair<std::string, CacheEntry>> decodeChecked(std::string_view bytes) {
  if (bytes.size() < kCacheEntryMagic.size() ||
      bytes.substr(0, kCacheEntryMagic.size()) != kCacheEntryMagic)
    return makeError(ErrorCode::FormatError,
                     bytes.size() < kCacheEntryMagic.size() &&
                             kCacheEntryMagic.starts_with(bytes)
                         ? "truncated (shorter than the header)"
                         : "not a kiln cache entry (bad magic)");
  Reader reader(bytes.substr(kCacheEntryMagic.size()));
  uint64_t version = reader.integer(4);
  if (reader.truncated())
    return makeError(ErrorCode::FormatError, "truncated (shorter than the header)");
  if (version != kCacheEntryFormatVersion)
    return makeError(ErrorCode::FormatError,
                     fmt::format("format version {} (this kiln reads {})", version,
                                 kCacheEntryFormatVersion));
  if (bytes.size() < kCacheEntryMagic.size() + 4 + kChecksumBytes)
    return makeError(ErrorCode::FormatError, "truncated (no checksum)");
  std::string_view body = bytes.substr(0, bytes.size() - kChecksumBytes);
  Reader checksumReader(bytes.substr(body.size()));
  Hash128 stored{checksumReader.integer(8), checksumReader.integer(8)};

  // Structure first: a short file reads as "truncated" rather than as a bad checksum.
  Reader fields(body.substr(kCacheEntryMagic.size() + 4));
  std::string key(fields.bytes(fields.integer(8)));
  CacheEntry entry;
  uint64_t sectionCount = fields.integer(4);
  for (uint64_t i = 0; i < sectionCount && !fields.truncated(); ++i) {
    std::string name(fields.bytes(fields.integer(4)));
    std::string payload(fields.bytes(fields.integer(8)));
    if (!fields.truncated())
      entry.sections[std::move(name)] = std::move(payload);
  }
  if (fields.truncated())
    return makeError(ErrorCode::FormatError, "truncated");
  if (hashBytes(body) != stored)
    return makeError(ErrorCode::FormatError, "checksum mismatch");
  if (fields.remaining() != 0 || entry.sections.size() != sectionCount)
    return makeError(ErrorCode::FormatError, "malformed (trailing bytes or a repeated section)");
  return std::pair{std::move(key), std::move(entry)};
}

} // namespace

const std::string *CacheEntry::section(std::string_view name) const {
  auto found = sections.find(std::string(name));
  return found == sections.end() ? nullptr : &found->second;
}

int64_t CacheEntry::payloadBytes() const {
  int64_t total = 0;
  for (const auto &[name, payload] : sections)
    total += static_cast<int64_t>(payload.size());
  return total;
}

std::string encodeCacheEntry(std::string_view key, const CacheEntry &entry) {
  std::string out(kCacheEntryMagic);
  appendInteger(out, kCacheEntryFormatVersion, 4);
  appendInteger(out, key.size(), 8);
  out += key;
  appendInteger(out, entry.sections.size(), 4);
  for (const auto &[name, payload] : entry.sections) {
    appendInteger(out, name.size(), 4);
    out += name;
    appendInteger(out, payload.size(), 8);
    out += payload;
  }
  appendChecksum(out, hashBytes(out));
  return out;
}

Expected<CacheEntry> decodeCacheEntry(std::string_view bytes, std::string_view expectedKey) {
  KILN_TRY(auto decoded, decodeChecked(bytes));
  if (decoded.first != expectedKey)
    return makeError(ErrorCode::FormatError,
                     "holds another key (a foreign entry or a hash collision)");
  return std::move(decoded.second);
}

Expected<std::string> readCacheEntryKey(std::string_view bytes) {
  KILN_TRY(auto decoded, decodeChecked(bytes));
  return std::move(decoded.first);
}

} // namespace kiln::runtime
