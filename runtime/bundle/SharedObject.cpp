// memfd_create + dlopen("/proc/self/fd/N"): the kernel's own way to load code
// that has no file.
#include "runtime/bundle/SharedObject.h"

#include "runtime/cache/AtomicFile.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <dlfcn.h>
#include <sys/mman.h>
#include <unistd.h>

namespace kiln::runtime::bundle {

Expected<std::shared_ptr<SharedObject>> SharedObject::load(std::string_view bytes,
                                                           std::string_view description) {
  int fd = ::memfd_create("kiln-bundle-code", MFD_CLOEXEC);
  if (fd < 0)
    return makeError(ErrorCode::IOError,
                     fmt::format("cannot create a memory file for {}: {}", description,
                                 std::strerror(errno)));
  if (!writeAll(fd, bytes)) {
    std::string reason = std::strerror(errno);
    ::close(fd);
    return makeError(ErrorCode::IOError,
                     fmt::format("cannot write {} to a memory file: {}", description, reason));
  }
  std::string path = fmt::format("/proc/self/fd/{}", fd);
  // RTLD_NOW: every undefined symbol is bound here, so a missing helper is a
  // load error and never a crash mid-run. RTLD_LOCAL: kernels of two bundles
  // may share names without one shadowing the other.
  void *handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *reason = ::dlerror();
    ::close(fd);
    return makeError(ErrorCode::FormatError,
                     fmt::format("cannot load {}: {}", description,
                                 reason ? reason : "dlopen failed"));
  }
  return std::shared_ptr<SharedObject>(new SharedObject(handle, fd));
}

SharedObject::~SharedObject() {
  ::dlclose(handle_);
  ::close(fd_);
}

void *SharedObject::symbol(const std::string &name) const {
  return ::dlsym(handle_, name.c_str());
}

} // namespace kiln::runtime::bundle
