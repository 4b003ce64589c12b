// A small flag parser shared by the kiln subcommands: "--name value",
// "--name=value" and boolean "--name", with errors naming the flag.
#pragma once

#include "support/Error.h"

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace kiln::tool {

class Args {
public:
  /// `valueFlags` take a value; `boolFlags` do not; `optionalValueFlags` take
  /// one only as "--name=value" (a bare "--name" has the empty value, and the
  /// next word stays positional). Anything else starting with "--" is an
  /// error; other words are positional.
  static Expected<Args> parse(const std::vector<std::string> &words,
                              const std::set<std::string> &valueFlags,
                              const std::set<std::string> &boolFlags,
                              const std::set<std::string> &optionalValueFlags = {});

  bool has(const std::string &flag) const { return values_.contains(flag); }
  /// The flag's value (the last, when it was given more than once).
  std::optional<std::string> value(const std::string &flag) const;
  /// Every value the flag was given, in order ("--shape a=1,2 --shape b=3").
  std::vector<std::string> values(const std::string &flag) const;
  Expected<int64_t> intValue(const std::string &flag, int64_t fallback, int64_t min) const;
  /// The flag's value as a finite number >= 0, or `fallback` when the flag is absent.
  Expected<double> nonNegativeValue(const std::string &flag, double fallback) const;
  const std::vector<std::string> &positional() const { return positional_; }

private:
  std::map<std::string, std::string> values_;
  std::map<std::string, std::vector<std::string>> allValues_;
  std::vector<std::string> positional_;
};

/// Exit codes: 0 success, 1 a failure (compile, run, check), 2 bad usage.
inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

} // namespace kiln::tool
