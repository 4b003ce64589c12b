// The tuner's progress bar.
#include "compiler/tuner/TuneProgressBar.h"

#include "compiler/tuner/SweepExport.h"

#include <fmt/format.h>

#include <algorithm>
#include <unistd.h>

namespace kiln::tuning {

namespace {
/// Summaries longer than this are cut so the line fits a terminal.
constexpr size_t kMaxSummary = 48;
} // namespace

TuneProgressBar::TuneProgressBar(std::ostream &out, bool terminal, int barWidth)
    : out_(out), terminal_(terminal), barWidth_(std::max(1, barWidth)) {}

bool TuneProgressBar::isTerminal(std::FILE *stream) { return ::isatty(::fileno(stream)) != 0; }

std::string TuneProgressBar::line(const TuneProgress &event) const {
  std::string summary = event.groupSummary;
  if (summary.size() > kMaxSummary)
    summary = summary.substr(0, kMaxSummary - 3) + "...";
  int planned = std::max(1, event.candidatesPlanned);
  int done = std::clamp(event.candidatesDone, 0, planned);
  int filled = barWidth_ * done / planned;
  std::string bar = std::string(size_t(filled), '#') + std::string(size_t(barWidth_ - filled), '-');
  std::string best = event.bestSeconds > 0 ? " best " + formatSeconds(event.bestSeconds) : "";
  return fmt::format("group {}/{} {} [{}] {}/{}{}", event.groupIndex + 1, event.groupCount,
                     summary, bar, event.candidatesDone, event.candidatesPlanned, best);
}

void TuneProgressBar::operator()(const TuneProgress &event) {
  bool finished = event.kind == TuneProgress::Kind::GroupFinished;
  if (!terminal_) {
    if (finished)
      out_ << line(event) << '\n' << std::flush;
    return;
  }
  std::string text = line(event);
  // Pad over the previous, longer line instead of relying on escape codes.
  size_t length = text.size();
  if (length < lastLength_)
    text += std::string(lastLength_ - length, ' ');
  out_ << '\r' << text;
  if (finished) {
    out_ << '\n';
    lastLength_ = 0;
  } else {
    lastLength_ = length;
  }
  out_ << std::flush;
}

} // namespace kiln::tuning
