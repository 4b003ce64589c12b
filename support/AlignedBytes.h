// A 64-byte aligned byte buffer (kBufferAlignment, so kernels may assume full-vector
// alignment) that is zeroed only when asked. Host tensors and arenas hold their data in one.
// A buffer a kernel overwrites in full (a run's outputs, an arena) skips the zero pass: that
// pass touched every page on one thread before the kernel's threads wrote it, and for VGG16's
// first layer at batch 16 (a 205 MB output) it cost more than the kernel.
// It may also borrow memory someone else owns (a numpy array, a torch tensor), read-only.
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
  /// A read-only view of `size` bytes at `data`, which someone else owns: `owner` (may be
  /// null when the caller keeps the memory alive itself) lives as long as the view. `data`
  /// must be borrowable (isBorrowable). kiln never writes borrowed memory: the mutable
  /// accessors first give the buffer a copy of its own.
  static AlignedBytes borrowed(const uint8_t *data, size_t size,
                               std::shared_ptr<const void> owner);
  /// Whether memory at `data` has the alignment kernels assume of every buffer, so that they
  /// can read it in place.
  static bool isBorrowable(const void *data) {
    return reinterpret_cast<uintptr_t>(data) % kBufferAlignment == 0;
  }

  /// Copies own their bytes, whether or not `other` borrows.
  AlignedBytes(const AlignedBytes &other);
  AlignedBytes &operator=(const AlignedBytes &other);
  AlignedBytes(AlignedBytes &&other) noexcept;
  AlignedBytes &operator=(AlignedBytes &&other) noexcept;
  ~AlignedBytes() = default;

  /// Mutable access to a borrowed buffer copies it first (see borrowed()).
  uint8_t *data() {
    ownBytes();
    return owned_.get();
  }
  const uint8_t *data() const { return borrowed_ ? borrowed_ : owned_.get(); }
  size_t size() const { return size_; }
  std::span<uint8_t> span() { return {data(), size_}; }
  std::span<const uint8_t> span() const { return {data(), size_}; }
  /// Whether the bytes are someone else's memory (a view made by borrowed()).
  bool isBorrowed() const { return borrowed_ != nullptr; }

private:
  /// Turns a borrowed view into a copy of its own (nothing for an owned buffer).
  void ownBytes();

  struct Free {
    void operator()(uint8_t *p) const { AlignedAllocator<uint8_t>().deallocate(p, 0); }
  };
  std::unique_ptr<uint8_t[], Free> owned_;
  /// Non-null only for a borrowed view; then owned_ is null.
  const uint8_t *borrowed_ = nullptr;
  std::shared_ptr<const void> owner_;
  size_t size_ = 0;
};

} // namespace kiln
