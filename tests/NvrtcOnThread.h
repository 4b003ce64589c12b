// NVRTC called from a test: on a thread of its own that ends before the call returns.
// LeakSanitizer (GCC 12's, with glibc 2.36) can misread the dynamic TLS NVRTC leaves on a
// thread still alive at exit and crash its leak check; a finished thread's TLS is not scanned.
#pragma once

#include "codegen/cuda/Nvrtc.h"

#include <string>
#include <string_view>
#include <thread>

namespace kiln::test {

inline Expected<codegen::cuda::NvrtcOutput>
compileWithNvrtcOnThread(std::string_view source, std::string_view programName,
                         const codegen::GpuTarget &target) {
  Expected<codegen::cuda::NvrtcOutput> result = makeError(ErrorCode::Unavailable, "not run");
  std::thread([&] { result = codegen::cuda::compileWithNvrtc(source, programName, target); })
      .join();
  return result;
}

} // namespace kiln::test
