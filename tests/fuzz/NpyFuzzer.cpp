// libFuzzer target for the .npy reader: any bytes must parse or be refused with a
// FormatError (Unsupported for a dtype kiln lacks), never a crash, an abort or an allocation
// the header merely asked for; an array that parses must serialize and parse back to the
// same tensor, bit for bit, and serializing that must give the same bytes.
#include "frontend/io/Npy.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

[[noreturn]] void fail(const char *what, const std::string &detail) {
  std::fprintf(stderr, "npy fuzzer: %s\n%s\n", what, detail.c_str());
  std::abort();
}

bool sameTensor(const kiln::HostTensor &a, const kiln::HostTensor &b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         std::equal(a.bytes().begin(), a.bytes().end(), b.bytes().begin(), b.bytes().end());
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char *>(data), size);
  auto parsed = kiln::io::parseNpy(bytes, "fuzz.npy");
  if (!parsed) {
    kiln::ErrorCode code = parsed.error().code();
    if (code != kiln::ErrorCode::FormatError && code != kiln::ErrorCode::Unsupported)
      fail("an error that is neither a FormatError nor Unsupported", parsed.error().str());
    return 0;
  }
  // Every dtype the reader produces is one the writer has a descr for.
  auto serialized = kiln::io::serializeNpy(*parsed);
  if (!serialized)
    fail("a parsed array does not serialize", serialized.error().str());
  auto reparsed = kiln::io::parseNpy(*serialized, "serialized.npy");
  if (!reparsed)
    fail("a serialized array does not parse", reparsed.error().str());
  if (!sameTensor(*parsed, *reparsed))
    fail("serialize then parse changed the array",
         parsed->typeStr() + " -> " + reparsed->typeStr());
  auto again = kiln::io::serializeNpy(*reparsed);
  if (!again || *again != *serialized)
    fail("the same array serialized to different bytes", parsed->typeStr());
  return 0;
}
