// Encoding and checking of section files. Every length read from a file is
// compared with the bytes left before it is used.
#include "runtime/cache/SectionFile.h"

#include "runtime/cache/ContentHash.h"

#include <fmt/format.h>

namespace kiln::runtime {
namespace {

constexpr size_t kChecksumBytes = 16;

void appendInteger(std::string &out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i)
    out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

/// Reads little-endian integers and byte strings off the front of a byte
/// string; any read past the end sets `truncated` and yields zero/empty.
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

} // namespace

const std::string_view *SectionFileView::section(std::string_view name) const {
  auto found = sections.find(name);
  return found == sections.end() ? nullptr : &found->second;
}

std::string encodeSectionFile(const SectionFileFormat &format, std::string_view header,
                              const std::map<std::string, std::string_view, std::less<>> &sections) {
  size_t total = format.magic.size() + 4 + 8 + header.size() + 4 + kChecksumBytes;
  for (const auto &[name, payload] : sections)
    total += 4 + name.size() + 8 + payload.size();
  std::string out;
  out.reserve(total);
  out += format.magic;
  appendInteger(out, format.version, 4);
  appendInteger(out, header.size(), 8);
  out += header;
  appendInteger(out, sections.size(), 4);
  for (const auto &[name, payload] : sections) {
    appendInteger(out, name.size(), 4);
    out += name;
    appendInteger(out, payload.size(), 8);
    out += payload;
  }
  Hash128 checksum = hashBytes(out);
  appendInteger(out, checksum.high, 8);
  appendInteger(out, checksum.low, 8);
  return out;
}

Expected<SectionFileView> decodeSectionFile(std::string_view bytes,
                                            const SectionFileFormat &format) {
  const std::string_view magic = format.magic;
  if (bytes.size() < magic.size() || bytes.substr(0, magic.size()) != magic)
    return makeError(ErrorCode::FormatError,
                     bytes.size() < magic.size() && magic.starts_with(bytes)
                         ? std::string("truncated (shorter than the header)")
                         : fmt::format("not a {} (bad magic)", format.kind));
  Reader reader(bytes.substr(magic.size()));
  uint64_t version = reader.integer(4);
  if (reader.truncated())
    return makeError(ErrorCode::FormatError, "truncated (shorter than the header)");
  if (version != format.version)
    return makeError(ErrorCode::FormatError,
                     fmt::format("format version {} (this kiln reads {})", version,
                                 format.version));
  if (bytes.size() < magic.size() + 4 + kChecksumBytes)
    return makeError(ErrorCode::FormatError, "truncated (no checksum)");
  std::string_view body = bytes.substr(0, bytes.size() - kChecksumBytes);
  Reader checksumReader(bytes.substr(body.size()));
  Hash128 stored{checksumReader.integer(8), checksumReader.integer(8)};

  Reader fields(body.substr(magic.size() + 4));
  SectionFileView view;
  view.header = fields.bytes(fields.integer(8));
  uint64_t sectionCount = fields.integer(4);
  bool repeated = false;
  for (uint64_t i = 0; i < sectionCount && !fields.truncated(); ++i) {
    std::string_view name = fields.bytes(fields.integer(4));
    std::string_view payload = fields.bytes(fields.integer(8));
    if (!fields.truncated())
      repeated = !view.sections.emplace(std::string(name), payload).second || repeated;
  }
  if (fields.truncated())
    return makeError(ErrorCode::FormatError, "truncated");
  if (hashBytes(body) != stored)
    return makeError(ErrorCode::FormatError, "checksum mismatch");
  if (fields.remaining() != 0 || repeated)
    return makeError(ErrorCode::FormatError, "malformed (trailing bytes or a repeated section)");
  return view;
}

} // namespace kiln::runtime
