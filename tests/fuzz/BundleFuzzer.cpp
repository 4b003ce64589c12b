// libFuzzer target for the AOT bundle loader's checks (parse only: no code is
// loaded). Any input must be accepted or refused with a FormatError — never a
// crash, a sanitizer report or an allocation the input merely asked for.
// Each input is also tried with its checksum recomputed, so mutations inside
// the sections reach the launch-plan, tensor and meta decoders instead of
// stopping at the checksum.
#include "runtime/bundle/BundleFile.h"
#include "runtime/bundle/BundleLoader.h"
#include "runtime/cache/ContentHash.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

void check(std::string_view bytes) {
  auto checked = kiln::runtime::bundle::checkBundle(bytes);
  if (!checked && checked.error().code() != kiln::ErrorCode::FormatError &&
      checked.error().code() != kiln::ErrorCode::InvalidArgument) {
    std::fprintf(stderr, "bundle fuzzer: unexpected error kind: %s\n",
                 checked.error().str().c_str());
    std::abort();
  }
  (void)kiln::runtime::bundle::inspectBundle(bytes);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char *>(data), size);
  check(bytes);
  constexpr size_t kChecksumBytes = 16;
  if (size > kChecksumBytes) {
    std::string resealed(bytes.substr(0, size - kChecksumBytes));
    kiln::runtime::Hash128 checksum = kiln::runtime::hashBytes(resealed);
    for (uint64_t lane : {checksum.high, checksum.low})
      for (int i = 0; i < 8; ++i)
        resealed.push_back(static_cast<char>((lane >> (8 * i)) & 0xff));
    check(resealed);
  }
  return 0;
}
