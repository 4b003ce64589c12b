// libFuzzer target for the ONNX importer: any bytes must import into a graph that verifies
// or be refused with an Error, never a crash, a hang, a sanitizer report or an exception
// escaping from the onnx library. External data is off (no directory), so no input reads a
// file.
#include "frontend/onnx/Import.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char *>(data), size);
  kiln::onnx::ImportOptions options;
  // Models with a dynamic batch import too, so mutations reach the converters.
  options.inputShapes = {{"input", {1, 3, 8, 8}}, {"x", {2, 3}}};
  auto graph = kiln::onnx::importModelFromBytes(bytes, options);
  if (graph && !(*graph)->finalize()) {
    std::fprintf(stderr, "onnx fuzzer: an imported graph does not verify: %s\n",
                 (*graph)->finalize().error().str().c_str());
    std::abort();
  }
  return 0;
}
