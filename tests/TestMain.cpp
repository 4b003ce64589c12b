// The Catch2 main shared by the unit-test executables (compiled once). Unit
// tests hide every GPU from the CUDA driver, so the auto target means the CPU
// in them on every machine (the GPU tests, tests/gpu, have their own main),
// and keep the kernel cache in a directory of their own, removed at the end.
// The default tuning database lives in that cache directory, so a user's
// tuning records never change what a test compiles; tests of tuning name
// their own database. Every kernel the tests lower is verified before and after each kernel
// pass (passes/kernel/Passes.h), in release builds too, and so are the tools they run.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

int main(int argc, char *argv[]) {
  setenv("CUDA_VISIBLE_DEVICES", "", /*overwrite=*/1);
  unsetenv("KILN_TUNING_DB");
  unsetenv("KILN_TUNING");
  setenv("KILN_VERIFY_KERNEL_IR", "1", /*overwrite=*/1);
  std::string cacheDir =
      (std::filesystem::temp_directory_path() / "kiln-test-cache-XXXXXX").string();
  bool ownCache = mkdtemp(cacheDir.data()) != nullptr;
  if (ownCache)
    setenv("KILN_CACHE_DIR", cacheDir.c_str(), /*overwrite=*/1);
  int failures = Catch::Session().run(argc, argv);
  if (ownCache) {
    std::error_code ignored;
    std::filesystem::remove_all(cacheDir, ignored);
  }
  return failures;
}
