// test_gpu's main: opens GPU 0 and runs the Catch2 tests on it, or reports the
// whole executable as skipped (exit code 77, which ctest shows as skipped) with
// the reason when no GPU is usable.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include "GpuTestDevice.h"

#include <cstdio>
#include <memory>

namespace {
/// ctest's SKIP_RETURN_CODE for test_gpu.
constexpr int kSkipped = 77;
std::shared_ptr<kiln::runtime::cuda::CudaDevice> openedDevice;
} // namespace

kiln::runtime::cuda::CudaDevice &gpuTestDevice() { return *openedDevice; }

int main(int argc, char *argv[]) {
  auto device = kiln::runtime::cuda::openCudaDevice(0);
  if (!device) {
    std::string reason = device.error().str();
    std::printf("SKIPPED: no usable GPU: %s\n", reason.c_str());
    return kSkipped;
  }
  openedDevice = *device;
  std::printf("test_gpu on %s\n", openedDevice->describe().c_str());
  int failures = Catch::Session().run(argc, argv);
  openedDevice.reset();
  return failures;
}
