// Sizes in bytes as users read them, and how much memory the machine has:
// what every "cannot allocate" and "file too large" message quotes.
#pragma once

#include <cstdint>
#include <string>

namespace kiln {

/// "12 bytes", "3.0 GiB (3221225472 bytes)".
std::string byteSizeText(uint64_t bytes);
/// "12 bytes", "3.0 GiB": for statistics, or beside an exact count the caller prints.
std::string shortByteSizeText(uint64_t bytes);

/// The machine's physical memory in bytes, or 0 when unknown. No single
/// buffer larger than this can be usefully allocated: with overcommit the
/// allocation may succeed and the process be killed while filling it.
uint64_t physicalMemoryBytes();

} // namespace kiln
