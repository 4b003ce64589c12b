// NVRTC loading and its errors: the version, a library that is not there
// ($KILN_NVRTC), and source NVRTC rejects (its log and the blamed line).
#include "NvrtcOnThread.h"
#include "ScopedEnv.h"
#include "codegen/cuda/Nvrtc.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <optional>
#include <string>

using namespace kiln;

using kiln::test::ScopedEnv;
using kiln::test::compileWithNvrtcOnThread;

namespace {

codegen::GpuTarget sm80() { return *codegen::gpuTargetNamed("sm_80"); }

} // namespace

TEST_CASE("KILN_NVRTC naming a missing library is Unavailable and names it", "[cuda-codegen][nvrtc]") {
  ScopedEnv env("KILN_NVRTC", "/nonexistent/libnvrtc-kiln-test.so");
  auto version = codegen::cuda::nvrtcVersion();
  REQUIRE_FALSE(version);
  CHECK(version.error().code() == ErrorCode::Unavailable);
  CHECK(version.error().message().find("/nonexistent/libnvrtc-kiln-test.so") != std::string::npos);
  auto compiled = compileWithNvrtcOnThread("__global__ void k() {}", "k.cu", sm80());
  REQUIRE_FALSE(compiled);
  CHECK(compiled.error().code() == ErrorCode::Unavailable);
}

TEST_CASE("NVRTC reports its version and rejects invalid CUDA with its log", "[cuda-codegen][nvrtc]") {
  auto version = codegen::cuda::nvrtcVersion();
  if (!version) {
    WARN("NVRTC unavailable, compile errors not checked: " << version.error().str());
    CHECK(version.error().code() == ErrorCode::Unavailable);
    return;
  }
  CHECK(version->find('.') != std::string::npos);
  std::string source = "extern \"C\" __global__ void broken(float *out) {\n"
                       "  out[0] = undefined_name;\n"
                       "}\n";
  auto compiled = compileWithNvrtcOnThread(source, "broken.cu", sm80());
  REQUIRE_FALSE(compiled);
  const Error &error = compiled.error();
  CHECK(error.code() == ErrorCode::CompileError);
  CHECK(error.message().find("broken.cu") != std::string::npos);
  REQUIRE(error.notes().size() == 2);
  CHECK(error.notes()[0].find("undefined_name") != std::string::npos);
  CHECK(error.notes()[0].find("error") != std::string::npos);
  CHECK(error.notes()[1] == "line 2:   out[0] = undefined_name;");

  auto ok = compileWithNvrtcOnThread("extern \"C\" __global__ void fine(float *out) { out[0] = 1.0f; }\n",
                                            "fine.cu", sm80());
  REQUIRE(ok);
  CHECK(ok->ptx.find(".entry fine(") != std::string::npos);
  CHECK_FALSE(ok->cubin.empty());
}
