// A 64-byte aligned byte buffer (kBufferAlignment, so kernels may assume full-vector
// alignment) that is zeroed only when asked. Host tensors and arenas hold their data in one.
// A buffer a kernel overwrites in full (a run's outputs, an arena) skips the zero pass: that
// pass touched every page on one thread before the kernel's threads wrote it, and for VGG16's
// first layer at batch 16 (a 205 MB output) it cost more than the kernel.
#pragma once

#include "support/AlignedAllocator.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

namespace kiln {

class AlignedBytes {
public:
  AlignedBytes() = default;
  /// `size` zero bytes. Throws std::bad_alloc when the memory is not there.
  static AlignedBytes zeroed(size_t size);
  /// `size` bytes whose contents are unspecified until written (std::bad_alloc as above).
  static AlignedBytes uninitialized(size_t size);

  AlignedBytes(const AlignedBytes &other);
  AlignedBytes &operator=(const AlignedBytes &other);
  AlignedBytes(AlignedBytes &&) noexcept = default;
  AlignedBytes &operator=(AlignedBytes &&) noexcept = default;

  uint8_t *data() { return data_.get(); }
  const uint8_t *data() const { return data_.get(); }
  size_t size() const { return size_; }
  std::span<uint8_t> span() { return {data_.get(), size_}; }
  std::span<const uint8_t> span() const { return {data_.get(), size_}; }

private:
  struct Free {
    void operator()(uint8_t *p) const { AlignedAllocator<uint8_t>().deallocate(p, 0); }
  };
  std::unique_ptr<uint8_t[], Free> data_;
  size_t size_ = 0;
};

} // namespace kiln
