#include "support/AlignedBytes.h"

#include "support/Error.h"

#include <cstring>
#include <utility>

#ifdef __linux__
#include <sys/mman.h>
#endif

namespace kiln {
namespace {

/// Asks for huge pages under a large buffer that nothing has touched yet (advice: without them
/// it works the same). A fresh allocation that large is mapped anew on every run of a model
/// (it is beyond the C library's reuse), and in 4 KiB pages the faults of its first touch cost
/// more than most kernels writing it: VGG16's first conv at batch 16 has a 205 MB output,
/// 0.8-0.9 s of page faults on a virtual machine against 25 ms in 2 MiB pages, with the
/// kernel itself taking 70 ms.
void adviseHugePages(uint8_t *data, size_t bytes) {
#ifdef __linux__
  constexpr uintptr_t kHugePage = uintptr_t(2) << 20;
  if (bytes < 4 * kHugePage)
    return;
  uintptr_t begin = (reinterpret_cast<uintptr_t>(data) + kHugePage - 1) / kHugePage * kHugePage;
  uintptr_t end = (reinterpret_cast<uintptr_t>(data) + bytes) / kHugePage * kHugePage;
  if (end > begin)
    ::madvise(reinterpret_cast<void *>(begin), end - begin, MADV_HUGEPAGE);
#else
  (void)data;
  (void)bytes;
#endif
}

} // namespace

AlignedBytes AlignedBytes::uninitialized(size_t size) {
  AlignedBytes bytes;
  if (size == 0)
    return bytes;
  bytes.owned_.reset(AlignedAllocator<uint8_t>().allocate(size));
  bytes.size_ = size;
  adviseHugePages(bytes.owned_.get(), size);
  return bytes;
}

AlignedBytes AlignedBytes::zeroed(size_t size) {
  AlignedBytes bytes = uninitialized(size);
  if (size > 0)
    std::memset(bytes.data(), 0, size);
  return bytes;
}

AlignedBytes AlignedBytes::borrowed(const uint8_t *data, size_t size,
                                    std::shared_ptr<const void> owner) {
  AlignedBytes bytes;
  if (size == 0)
    return bytes; // nothing to view: an empty buffer of its own
  KILN_CHECK(data != nullptr && isBorrowable(data),
             "AlignedBytes::borrowed needs non-null memory with kBufferAlignment alignment "
             "(callers check isBorrowable and copy otherwise)");
  bytes.borrowed_ = data;
  bytes.owner_ = std::move(owner);
  bytes.size_ = size;
  return bytes;
}

AlignedBytes::AlignedBytes(const AlignedBytes &other) : AlignedBytes(uninitialized(other.size_)) {
  if (size_ > 0)
    std::memcpy(owned_.get(), other.data(), size_);
}

AlignedBytes &AlignedBytes::operator=(const AlignedBytes &other) {
  if (this != &other)
    *this = AlignedBytes(other);
  return *this;
}

// Written out so that a moved-from buffer is empty (size 0), not a size without memory.
AlignedBytes::AlignedBytes(AlignedBytes &&other) noexcept
    : owned_(std::move(other.owned_)), borrowed_(std::exchange(other.borrowed_, nullptr)),
      owner_(std::move(other.owner_)), size_(std::exchange(other.size_, 0)) {}

AlignedBytes &AlignedBytes::operator=(AlignedBytes &&other) noexcept {
  if (this != &other) {
    owned_ = std::move(other.owned_);
    borrowed_ = std::exchange(other.borrowed_, nullptr);
    owner_ = std::move(other.owner_);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void AlignedBytes::ownBytes() {
  if (!borrowed_)
    return;
  *this = AlignedBytes(*this);
}

} // namespace kiln
