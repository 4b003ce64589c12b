// libFuzzer target for the kernel IR parser: any input must either fail with a located
// ParseError or parse into kernels whose printed text parses again and prints the same
// (print(parse(print(parse(x)))) == print(parse(x))).
#include "ir/kernel/Parser.h"
#include "ir/kernel/Printer.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace {

[[noreturn]] void fail(const char *what, const std::string &detail) {
  std::fprintf(stderr, "kernel parser fuzzer: %s\n%s\n", what, detail.c_str());
  std::abort();
}

std::string printAll(const std::vector<kiln::kir::Kernel> &kernels) {
  std::string text;
  for (const kiln::kir::Kernel &kernel : kernels)
    text += kiln::kir::printKernel(kernel);
  return text;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string_view text(reinterpret_cast<const char *>(data), size);
  auto kernels = kiln::kir::parseKernels(text, "fuzz.kir");
  if (!kernels) {
    const kiln::Error &error = kernels.error();
    if (error.code() != kiln::ErrorCode::ParseError || !error.location() ||
        error.location()->line == 0)
      fail("an error that is not a located ParseError", error.str());
    return 0;
  }
  std::string printed = printAll(*kernels);
  auto reparsed = kiln::kir::parseKernels(printed, "printed.kir");
  if (!reparsed)
    fail("printed text does not parse", reparsed.error().str() + "\n" + printed);
  std::string again = printAll(*reparsed);
  if (again != printed)
    fail("print(parse(print(k))) != print(k)", printed + "\n---- reprinted ----\n" + again);
  return 0;
}
