// An allocator giving 64-byte aligned storage: host tensors and arenas use it so
// generated kernels may assume cache-line (and full-vector) alignment.
#pragma once

#include <cstddef>
#include <new>

namespace kiln {

inline constexpr std::size_t kBufferAlignment = 64;

template <typename T> struct AlignedAllocator {
  using value_type = T;
  AlignedAllocator() = default;
  template <typename U> AlignedAllocator(const AlignedAllocator<U> &) {}
  T *allocate(std::size_t n) {
    return static_cast<T *>(::operator new(n * sizeof(T), std::align_val_t{kBufferAlignment}));
  }
  void deallocate(T *p, std::size_t) { ::operator delete(p, std::align_val_t{kBufferAlignment}); }
  template <typename U> bool operator==(const AlignedAllocator<U> &) const { return true; }
};

} // namespace kiln
