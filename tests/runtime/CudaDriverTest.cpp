// Opening a GPU where there is none: every way the CUDA driver can be missing
// must give an Unavailable error that says which and why. (On a GPU machine the
// default search succeeds, which these tests accept.)
#include "ScopedEnv.h"
#include "runtime/cuda/CudaDevice.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <optional>

using namespace kiln;
using runtime::cuda::openCudaDevice;

using kiln::test::ScopedEnv;

namespace {

constexpr const char *kToolkitStub = "/usr/local/cuda/lib64/stubs/libcuda.so";

} // namespace

TEST_CASE("KILN_LIBCUDA naming a missing library is Unavailable and names it", "[cuda]") {
  ScopedEnv forced("KILN_LIBCUDA", "/nonexistent/libcuda.so");
  auto device = openCudaDevice(0);
  REQUIRE_FALSE(device);
  CHECK(device.error().code() == ErrorCode::Unavailable);
  CHECK_THAT(device.error().message(), Catch::StartsWith("no usable CUDA driver: "
                                                         "KILN_LIBCUDA=/nonexistent/libcuda.so: "));
  CHECK_THAT(device.error().message(), Catch::Contains("No such file"));
  // Only the named library was tried.
  CHECK_THAT(device.error().message(), !Catch::Contains("tried"));
}

TEST_CASE("the toolkit's stub libcuda is recognized as 'no driver installed'", "[cuda]") {
  REQUIRE(std::filesystem::exists(kToolkitStub)); // the CUDA toolkit is a build dependency
  ScopedEnv forced("KILN_LIBCUDA", kToolkitStub);
  auto device = openCudaDevice(0);
  REQUIRE_FALSE(device);
  CHECK(device.error().code() == ErrorCode::Unavailable);
  CHECK_THAT(device.error().message(), Catch::Contains(kToolkitStub));
  CHECK_THAT(device.error().message(), Catch::Contains("stub library"));
  CHECK_THAT(device.error().message(), Catch::Contains("no NVIDIA driver is installed"));
}

TEST_CASE("the default search says why no GPU is usable, or opens one", "[cuda]") {
  ScopedEnv unforced("KILN_LIBCUDA", nullptr);
  auto device = openCudaDevice(0);
  if (device) {
    // A machine with a GPU and driver.
    CHECK_THAT((*device)->describe(), Catch::Contains("sm_"));
    auto outOfRange = openCudaDevice(1000);
    REQUIRE_FALSE(outOfRange);
    CHECK(outOfRange.error().code() == ErrorCode::Unavailable);
    CHECK_THAT(outOfRange.error().message(), Catch::Contains("GPU ordinal 1000 is out of range"));
    // The same GPU opened twice is one device (one primary-context retain).
    CHECK(openCudaDevice(0)->get() == device->get());
    return;
  }
  INFO(device.error().str());
  CHECK(device.error().code() == ErrorCode::Unavailable);
  CHECK_THAT(device.error().message(), Catch::StartsWith("no usable CUDA driver: ") ||
                                           Catch::StartsWith("no CUDA device"));
  // The same question asked again gets the same (cached) answer.
  auto again = openCudaDevice(0);
  REQUIRE_FALSE(again);
  CHECK(again.error().str() == device.error().str());
}
