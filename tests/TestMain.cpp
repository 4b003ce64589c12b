// The Catch2 main shared by the unit-test executables (compiled once). Unit
// tests hide every GPU from the CUDA driver, so the auto target means the CPU
// in them on every machine; the GPU tests (tests/gpu) have their own main.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdlib>

int main(int argc, char *argv[]) {
  setenv("CUDA_VISIBLE_DEVICES", "", /*overwrite=*/1);
  return Catch::Session().run(argc, argv);
}
