// A shared object loaded from bytes in memory (a CPU bundle's kernels):
// written to an anonymous memory file and opened with dlopen, so loading
// writes nothing to any directory.
#pragma once

#include "support/Error.h"

#include <memory>
#include <string>
#include <string_view>

namespace kiln::runtime::bundle {

class SharedObject {
public:
  /// Loads `bytes` (an ELF shared object) with every symbol bound now: an
  /// undefined symbol (a kiln_cpu_* helper this kiln_rt lacks) is an error
  /// quoting the dynamic loader. `description` names it in errors.
  static Expected<std::shared_ptr<SharedObject>> load(std::string_view bytes,
                                                      std::string_view description);
  ~SharedObject();
  SharedObject(const SharedObject &) = delete;
  SharedObject &operator=(const SharedObject &) = delete;

  /// The address of the exported symbol `name`, or nullptr.
  void *symbol(const std::string &name) const;

private:
  SharedObject(void *handle, int fd) : handle_(handle), fd_(fd) {}
  void *handle_;
  /// The memory file stays open while the object is loaded: the loader knows
  /// the object by its path /proc/self/fd/N, and a closed N reused by another
  /// bundle would make dlopen return this object for that path.
  int fd_;
};

} // namespace kiln::runtime::bundle
