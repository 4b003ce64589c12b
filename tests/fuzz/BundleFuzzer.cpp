// libFuzzer target for the AOT bundle loader's checks (parse only: no code is
// loaded). Any input must be accepted or refused with a FormatError — never a
// crash, a sanitizer report or an allocation the input merely asked for.
// Each input is also tried with its checksum recomputed, so mutations inside
// the sections reach the launch-plan, tensor and meta decoders instead of
// stopping at the checksum.
#include "runtime/bundle/BundleFile.h"
#include "runtime/bundle/BundleLoader.h"
#include "Resealed.h"

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
  if (std::optional<std::string> sealed = kiln::fuzz::resealed(bytes))
    check(*sealed);
  return 0;
}
