// The JSON-lines output the CPU benchmarks share: each figure one JSON object
// per line on stdout, flushed, so the runner scripts read them as they come.
#pragma once

#include <fmt/format.h>

#include <cstdio>
#include <string>
#include <string_view>

namespace kiln::bench {

/// `text` as a JSON string literal, quotes included.
inline std::string jsonString(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\n': out += "\\n"; break;
    case '\t': out += "\\t"; break;
    default:
      if (static_cast<unsigned char>(c) < 0x20)
        out += fmt::format("\\u{:04x}", static_cast<int>(c));
      else
        out += c;
    }
  }
  return out + "\"";
}

/// One line on stdout, flushed.
inline void printLine(const std::string &line) {
  std::fputs(line.c_str(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

} // namespace kiln::bench
