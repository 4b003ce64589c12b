// A text progress bar for the tuner: redrawn in place on a terminal, one line
// per finished group elsewhere (a log stays readable).
#pragma once

#include "compiler/tuner/Tuner.h"

#include <cstdio>
#include <ostream>

namespace kiln::tuning {

/// Draws `group 3/7 contraction matmul ... [#####-----] 12/40 best 1.23 ms`.
/// Pass it (by reference, through a lambda) as TunerOptions::progress.
class TuneProgressBar {
public:
  /// `terminal`: redraw one line with '\r' (use isTerminal(stderr) for std::cerr).
  TuneProgressBar(std::ostream &out, bool terminal, int barWidth = 20);

  void operator()(const TuneProgress &event);

  /// The line for `event`, without '\r' or newline.
  std::string line(const TuneProgress &event) const;

  static bool isTerminal(std::FILE *stream);

private:
  std::ostream &out_;
  bool terminal_;
  int barWidth_;
  size_t lastLength_ = 0;
};

} // namespace kiln::tuning
