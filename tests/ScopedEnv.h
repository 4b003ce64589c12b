// Test support: set or unset an environment variable for one scope.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

namespace kiln::test {

/// Sets `name` to `value` (unsets it when `value` is null) and restores the
/// old value, or its absence, when the scope ends.
class ScopedEnv {
public:
  ScopedEnv(const char *name, const char *value) : name_(name) {
    if (const char *old = std::getenv(name))
      old_ = old;
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv &) = delete;
  ScopedEnv &operator=(const ScopedEnv &) = delete;

private:
  const char *name_;
  std::optional<std::string> old_;
};

} // namespace kiln::test
