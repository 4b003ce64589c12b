// byteSizeText and shortByteSizeText: bytes below 1 KiB as a count, larger sizes in binary
// units with one decimal; byteSizeText adds the exact count.
#include "support/MemorySize.h"

#include <catch2/catch.hpp>

#include <cstdint>

using namespace kiln;

TEST_CASE("shortByteSizeText picks the largest binary unit", "[support]") {
  CHECK(shortByteSizeText(0) == "0 bytes");
  CHECK(shortByteSizeText(1023) == "1023 bytes");
  CHECK(shortByteSizeText(1024) == "1.0 KiB");
  CHECK(shortByteSizeText(1536) == "1.5 KiB");
  CHECK(shortByteSizeText(uint64_t{12} << 20) == "12.0 MiB");
  CHECK(shortByteSizeText(uint64_t{3} << 30) == "3.0 GiB");
  CHECK(shortByteSizeText(UINT64_MAX) == "16.0 EiB");
}

TEST_CASE("byteSizeText adds the exact count to a rounded size", "[support]") {
  CHECK(byteSizeText(12) == "12 bytes");
  CHECK(byteSizeText(uint64_t{3} << 30) == "3.0 GiB (3221225472 bytes)");
}
