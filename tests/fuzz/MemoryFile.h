// A fuzz input as a path: the bytes live in a memfd named "/proc/self/fd/N", a regular file,
// so the path-based readers (safetensors, IDX) read it unchanged and nothing touches the disk.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <sys/mman.h>
#include <unistd.h>

namespace kiln::fuzz {

class MemoryFile {
public:
  MemoryFile() : fd_(::memfd_create("kiln-fuzz-input", MFD_CLOEXEC)) {
    if (fd_ < 0) {
      std::perror("memfd_create");
      std::abort();
    }
  }
  MemoryFile(const MemoryFile &) = delete;
  MemoryFile &operator=(const MemoryFile &) = delete;
  ~MemoryFile() { ::close(fd_); }

  /// Replaces the contents with `bytes`; one memfd serves every input of a run.
  void assign(std::string_view bytes) {
    if (::ftruncate(fd_, 0) != 0)
      fail("ftruncate");
    size_t done = 0;
    while (done < bytes.size()) {
      ssize_t wrote = ::pwrite(fd_, bytes.data() + done, bytes.size() - done,
                               static_cast<off_t>(done));
      if (wrote <= 0)
        fail("pwrite");
      done += static_cast<size_t>(wrote);
    }
  }

  /// Opening this path gives a fresh descriptor at offset 0, as a real file would.
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }

private:
  [[noreturn]] static void fail(const char *call) {
    std::perror(call);
    std::abort();
  }

  int fd_;
};

} // namespace kiln::fuzz
