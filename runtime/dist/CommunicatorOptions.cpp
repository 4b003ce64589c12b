// The collective timeout: an option, an environment variable, or 60 s.
#include "runtime/dist/CommunicatorOptions.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string_view>

namespace kiln::runtime::dist {

Expected<std::chrono::milliseconds> resolveTimeout(const CommunicatorOptions &options) {
  if (options.timeout) {
    if (options.timeout->count() <= 0)
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("collective timeout of {} ms: it must be positive",
                                   options.timeout->count()));
    return *options.timeout;
  }
  const char *text = std::getenv("KILN_DIST_TIMEOUT");
  if (!text || !*text)
    return kDefaultCollectiveTimeout;
  std::string_view value(text);
  double seconds = 0;
  auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), seconds);
  // A day is longer than any collective should wait; beyond it the value is a typo.
  if (error != std::errc() || end != value.data() + value.size() || !std::isfinite(seconds) ||
      seconds <= 0 || seconds > 86400)
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("KILN_DIST_TIMEOUT='{}' is not a number of seconds between 0 "
                                 "and 86400 (e.g. 60 or 2.5)",
                                 value));
  return std::chrono::milliseconds(std::max<int64_t>(1, std::llround(seconds * 1000)));
}

} // namespace kiln::runtime::dist
