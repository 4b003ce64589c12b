// Kernel cache entry files: a section file whose header is the entry's key.
#include "runtime/cache/CacheEntryFile.h"

#include "runtime/cache/SectionFile.h"

namespace kiln::runtime {
namespace {

constexpr SectionFileFormat kCacheEntryFormat{kCacheEntryMagic, kCacheEntryFormatVersion,
                                              "kiln cache entry"};

/// The key and sections of `bytes`, checked for magic, version, structure and checksum.
Expected<std::pair<std::string, CacheEntry>> decodeChecked(std::string_view bytes) {
  KILN_TRY(SectionFileView view, decodeSectionFile(bytes, kCacheEntryFormat));
  CacheEntry entry;
  for (const auto &[name, payload] : view.sections)
    entry.sections.emplace(name, std::string(payload));
  return std::pair{std::string(view.header), std::move(entry)};
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
  std::map<std::string, std::string_view, std::less<>> sections(entry.sections.begin(),
                                                                entry.sections.end());
  return encodeSectionFile(kCacheEntryFormat, key, sections);
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
