// NVRTC called from a test: on a thread of its own that ends before the call returns.
// LeakSanitizer (GCC 12's, with glibc 2.36) can misread the dynamic TLS NVRTC leaves on a
// thread still alive at exit and crash its leak check; a finished thread's TLS is not scanned.
#pragma once

#include "codegen/cuda/Nvrtc.h"

#include <string>
#include <string_view>
#include <thread>

namespace kiln::test {

/// `compile` (compileWithNvrtc or compilePtxWithNvrtc) run on a thread of its own.
inline Expected<codegen::cuda::NvrtcOutput>
nvrtcOnThread(decltype(&codegen::cuda::compileWithNvrtc) compile, std::string_view source,
              std::string_view programName, const codegen::GpuTarget &target) {
  Expected<codegen::cuda::NvrtcOutput> result = makeError(ErrorCode::Unavailable, "not run");
  std::thread([&] { result = compile(source, programName, target); }).join();
  return result;
}

/// PTX and cubin (codegen::cuda::compileWithNvrtc).
inline Expected<codegen::cuda::NvrtcOutput>
compileWithNvrtcOnThread(std::string_view source, std::string_view programName,
                         const codegen::GpuTarget &target) {
  return nvrtcOnThread(&codegen::cuda::compileWithNvrtc, source, programName, target);
}

/// PTX alone (codegen::cuda::compilePtxWithNvrtc): half the compiles, for ptxas checks.
inline Expected<codegen::cuda::NvrtcOutput>
compilePtxWithNvrtcOnThread(std::string_view source, std::string_view programName,
                            const codegen::GpuTarget &target) {
  return nvrtcOnThread(&codegen::cuda::compilePtxWithNvrtc, source, programName, target);
}

} // namespace kiln::test
