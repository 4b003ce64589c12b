// The JSON-lines output the CPU benchmarks share: each figure one JSON object
// per line on stdout, flushed, so the runner scripts read them as they come.
#pragma once

#include "support/Json.h"

#include <fmt/format.h>

#include <cstdio>
#include <string>
#include <string_view>

namespace kiln::bench {

/// `text` as a JSON string literal, quotes included (support/Json.h's).
inline std::string jsonString(std::string_view text) { return json::quote(text); }

/// One line on stdout, flushed.
inline void printLine(const std::string &line) {
  std::fputs(line.c_str(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

} // namespace kiln::bench
