// Byte sizes in messages, and the machine's physical memory.
#include "support/MemorySize.h"

#include <fmt/format.h>

#include <iterator>
#include <unistd.h>

namespace kiln {

std::string byteSizeText(uint64_t bytes) {
  return bytes < 1024 ? shortByteSizeText(bytes)
                      : fmt::format("{} ({} bytes)", shortByteSizeText(bytes), bytes);
}

std::string shortByteSizeText(uint64_t bytes) {
  static constexpr const char *kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024)
    return fmt::format("{} bytes", bytes);
  double scaled = static_cast<double>(bytes);
  size_t unit = 0;
  for (scaled /= 1024; scaled >= 1024 && unit + 1 < std::size(kUnits); scaled /= 1024)
    ++unit;
  return fmt::format("{:.1f} {}", scaled, kUnits[unit]);
}

uint64_t physicalMemoryBytes() {
  long pages = ::sysconf(_SC_PHYS_PAGES);
  long pageSize = ::sysconf(_SC_PAGESIZE);
  if (pages <= 0 || pageSize <= 0)
    return 0;
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(pageSize);
}

} // namespace kiln
