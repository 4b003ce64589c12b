// Heap scratch for large kernel-local buffers (see ScratchMemory.h).
#include "runtime/cpu/ScratchMemory.h"

#include <cstdio>
#include <cstdlib>
#include <new>

namespace {
constexpr std::size_t kScratchAlignment = 64;
}

extern "C" void *kiln_cpu_scratch_alloc(int64_t bytes) {
  std::size_t size = bytes > 0 ? static_cast<std::size_t>(bytes) : 1;
  void *pointer = ::operator new (size, std::align_val_t{kScratchAlignment}, std::nothrow);
  if (!pointer) {
    std::fprintf(stderr, "kiln: out of memory allocating %lld bytes of kernel scratch\n",
                 static_cast<long long>(bytes));
    std::abort();
  }
  return pointer;
}

extern "C" void kiln_cpu_scratch_free(void *pointer) {
  ::operator delete (pointer, std::align_val_t{kScratchAlignment}, std::nothrow);
}
