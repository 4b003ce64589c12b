// CSV, JSON and SVG renderings of sweeps, and the atomic file write they share.
#include "compiler/tuner/SweepExport.h"

#include "support/Json.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <optional>
#include <unistd.h>

namespace kiln::tuning {

namespace {

std::string csvField(std::string_view text) {
  if (text.find_first_of(",\"\n\r") == std::string_view::npos)
    return std::string(text);
  std::string quoted = "\"";
  for (char c : text) {
    if (c == '"')
      quoted += '"';
    quoted += c;
  }
  return quoted + '"';
}

std::string number(double value) { return fmt::format("{:.9g}", value); }

std::optional<double> asNumber(std::string_view text) {
  double value = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size())
    return std::nullopt;
  return value;
}

/// Every field name of every candidate, in order of first appearance.
std::vector<std::string> fieldColumns(std::span<const SweepGroup> sweep) {
  std::vector<std::string> columns;
  for (const SweepGroup &group : sweep)
    for (const CandidateTiming &candidate : group.candidates)
      for (auto &[key, value] : scheduleFields(candidate.schedule))
        if (std::find(columns.begin(), columns.end(), key) == columns.end())
          columns.push_back(key);
  return columns;
}

std::string xmlEscaped(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
    case '&': out += "&amp;"; break;
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '"': out += "&quot;"; break;
    default: out += c;
    }
  }
  return out;
}

/// The unit a group's times read best in.
std::pair<double, const char *> unitFor(double seconds) {
  if (seconds >= 1)
    return {1, "s"};
  if (seconds >= 1e-3)
    return {1e3, "ms"};
  return {1e6, "us"};
}

/// The order candidates are plotted in (see SweepPlotOptions::sortBy).
std::vector<size_t> plotOrder(const SweepGroup &group, const std::string &sortBy) {
  std::vector<size_t> order(group.candidates.size());
  std::iota(order.begin(), order.end(), size_t{0});
  auto timeOf = [&](size_t i) {
    const CandidateTiming &c = group.candidates[i];
    return c.valid && c.runs > 0 ? c.medianSeconds : HUGE_VAL;
  };
  auto fieldOf = [&](size_t i) -> std::pair<double, std::string> {
    for (auto &[key, value] : scheduleFields(group.candidates[i].schedule))
      if (key == sortBy)
        return {asNumber(value).value_or(HUGE_VAL), value};
    return {HUGE_VAL, ""};
  };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (sortBy != "time") {
      auto fa = fieldOf(a), fb = fieldOf(b);
      if (fa != fb)
        return fa < fb;
    }
    return timeOf(a) < timeOf(b);
  });
  return order;
}

constexpr double kPanelWidth = 640, kPanelHeight = 300;
constexpr double kLeft = 80, kRight = 20, kTop = 40, kBottom = 60;

std::string svgPanel(const SweepGroup &group, const SweepPlotOptions &options, double top) {
  std::string out;
  double plotWidth = kPanelWidth - kLeft - kRight, plotHeight = kPanelHeight - kTop - kBottom;
  double x0 = kLeft, y0 = top + kTop;
  double lo = HUGE_VAL, hi = 0;
  for (const CandidateTiming &c : group.candidates)
    if (c.valid && c.runs > 0 && c.medianSeconds > 0) {
      lo = std::min(lo, c.medianSeconds);
      hi = std::max(hi, c.medianSeconds);
    }
  if (hi <= 0) {
    lo = 1e-6;
    hi = 1e-3;
  }
  // A log axis with some room above and below; a flat group still gets a range.
  double logLo = std::log10(lo) - 0.05, logHi = std::log10(hi) + 0.05;
  if (logHi - logLo < 0.2) {
    double mid = 0.5 * (logLo + logHi);
    logLo = mid - 0.1;
    logHi = mid + 0.1;
  }
  auto [scale, unit] = unitFor(hi);
  auto yOf = [&](double seconds) {
    return y0 + plotHeight * (1 - (std::log10(seconds) - logLo) / (logHi - logLo));
  };
  std::vector<size_t> order = plotOrder(group, options.sortBy);
  size_t n = std::max<size_t>(order.size(), 1);
  auto xOf = [&](size_t rank) { return x0 + plotWidth * (double(rank) + 0.5) / double(n); };

  out += fmt::format("<g class=\"group\">\n<text x=\"{}\" y=\"{}\" font-size=\"13\">{}</text>\n",
                     x0, top + 20, xmlEscaped(group.summary));
  out += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" "
                     "stroke=\"#888\"/>\n",
                     x0, y0, plotWidth, plotHeight);
  // Y ticks at the range's ends and middle.
  for (double t : {0.0, 0.5, 1.0}) {
    double seconds = std::pow(10.0, logLo + t * (logHi - logLo));
    double y = yOf(seconds);
    out += fmt::format("<line x1=\"{}\" y1=\"{:.1f}\" x2=\"{}\" y2=\"{:.1f}\" stroke=\"#888\"/>"
                       "<text x=\"{}\" y=\"{:.1f}\" font-size=\"10\" text-anchor=\"end\">{:.3g}"
                       "</text>\n",
                       x0 - 4, y, x0, y, x0 - 6, y + 3, seconds * scale);
  }
  out += fmt::format("<text class=\"axis-label\" x=\"{}\" y=\"{}\" font-size=\"11\" "
                     "transform=\"rotate(-90 {} {})\" text-anchor=\"middle\">median time ({}, "
                     "log scale)</text>\n",
                     x0 - 55, y0 + plotHeight / 2, x0 - 55, y0 + plotHeight / 2, unit);
  std::string by = options.sortBy == "time" ? "median time" : options.sortBy;
  out += fmt::format("<text class=\"axis-label\" x=\"{}\" y=\"{}\" font-size=\"11\" "
                     "text-anchor=\"middle\">candidate configuration (sorted by {}; {} "
                     "candidates)</text>\n",
                     x0 + plotWidth / 2, y0 + plotHeight + 35, xmlEscaped(by),
                     group.candidates.size());

  int winner = sweepWinner(group);
  for (size_t rank = 0; rank < order.size(); ++rank) {
    size_t i = order[rank];
    const CandidateTiming &c = group.candidates[i];
    double x = xOf(rank);
    bool timed = c.valid && c.runs > 0 && c.medianSeconds > 0;
    std::string tip = xmlEscaped(fmt::format(
        "{}: {}{}", c.schedule, timed ? formatSeconds(c.medianSeconds) : std::string("invalid"),
        c.note.empty() ? "" : " (" + c.note + ")"));
    if (timed) {
      out += fmt::format("<circle class=\"candidate\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"3\" "
                         "fill=\"#3366cc\"><title>{}</title></circle>\n",
                         x, yOf(c.medianSeconds), tip);
    } else {
      out += fmt::format("<rect class=\"candidate invalid\" x=\"{:.1f}\" y=\"{:.1f}\" "
                         "width=\"6\" height=\"6\" fill=\"#cc3333\"><title>{}</title></rect>\n",
                         x - 3, y0 - 3, tip);
    }
    if (i == 0 && timed)
      out += fmt::format("<circle class=\"default-mark\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"7\" "
                         "fill=\"none\" stroke=\"#222\"/>\n",
                         x, yOf(c.medianSeconds));
    if (int(i) == winner)
      out += fmt::format("<text class=\"winner-mark\" x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"16\" "
                         "text-anchor=\"middle\" fill=\"#d4a017\">&#9733;</text>\n",
                         x, yOf(c.medianSeconds) - 8);
  }
  // A legend, so the marks explain themselves.
  out += fmt::format("<text x=\"{}\" y=\"{}\" font-size=\"10\">ring: heuristic default; star: "
                     "winner; red square: invalid</text>\n</g>\n",
                     x0, y0 + plotHeight + 50);
  return out;
}

} // namespace

std::vector<std::pair<std::string, std::string>> scheduleFields(std::string_view schedule) {
  std::vector<std::pair<std::string, std::string>> fields;
  size_t pos = 0;
  while (pos < schedule.size()) {
    size_t end = schedule.find(' ', pos);
    if (end == std::string_view::npos)
      end = schedule.size();
    std::string_view word = schedule.substr(pos, end - pos);
    size_t eq = word.find('=');
    if (eq != std::string_view::npos && eq > 0)
      fields.emplace_back(std::string(word.substr(0, eq)), std::string(word.substr(eq + 1)));
    pos = end + 1;
  }
  return fields;
}

int sweepWinner(const SweepGroup &group) {
  int best = -1;
  for (size_t i = 0; i < group.candidates.size(); ++i) {
    const CandidateTiming &c = group.candidates[i];
    if (c.valid && c.runs > 0 &&
        (best < 0 || c.medianSeconds < group.candidates[size_t(best)].medianSeconds))
      best = static_cast<int>(i);
  }
  return best;
}

std::string formatSeconds(double seconds) {
  auto [scale, unit] = unitFor(seconds);
  return fmt::format("{:.3g} {}", seconds * scale, unit);
}

std::string sweepCsv(std::span<const SweepGroup> sweep) {
  std::vector<std::string> columns = fieldColumns(sweep);
  std::string out = "group,summary,signature,shapes,target,kiln_version,candidate,schedule,backend";
  for (const std::string &column : columns) {
    out += ',';
    out += csvField(column);
  }
  out += ",median_s,min_s,runs,valid,note\n";
  for (size_t g = 0; g < sweep.size(); ++g) {
    const SweepGroup &group = sweep[g];
    for (size_t i = 0; i < group.candidates.size(); ++i) {
      const CandidateTiming &c = group.candidates[i];
      out += fmt::format("{},{},{},{},{},{},{},{},{}", g, csvField(group.summary),
                         csvField(group.key.signature), csvField(group.key.shapes),
                         csvField(group.key.target), csvField(group.key.kilnVersion), i,
                         csvField(c.schedule), csvField(c.backend));
      auto fields = scheduleFields(c.schedule);
      for (const std::string &column : columns) {
        auto it = std::find_if(fields.begin(), fields.end(),
                               [&](const auto &field) { return field.first == column; });
        out += ',';
        if (it != fields.end())
          out += csvField(it->second);
      }
      out += fmt::format(",{},{},{},{},{}\n", number(c.medianSeconds), number(c.minSeconds),
                         c.runs, c.valid ? "true" : "false", csvField(c.note));
    }
  }
  return out;
}

std::string sweepJson(std::span<const SweepGroup> sweep) {
  std::string out = "{\"groups\": [";
  for (size_t g = 0; g < sweep.size(); ++g) {
    const SweepGroup &group = sweep[g];
    out += fmt::format("{}\n  {{\"summary\": {}, \"signature\": {}, \"shapes\": {}, \"target\": "
                       "{}, \"kiln_version\": {}, \"candidates\": [",
                       g ? "," : "", json::quote(group.summary), json::quote(group.key.signature),
                       json::quote(group.key.shapes), json::quote(group.key.target),
                       json::quote(group.key.kilnVersion));
    for (size_t i = 0; i < group.candidates.size(); ++i) {
      const CandidateTiming &c = group.candidates[i];
      std::string fields;
      for (auto &[key, value] : scheduleFields(c.schedule))
        fields += fmt::format("{}{}: {}", fields.empty() ? "" : ", ", json::quote(key),
                             json::quote(value));
      out += fmt::format("{}\n    {{\"schedule\": {}, \"backend\": {}, \"fields\": {{{}}}, "
                         "\"median_s\": {}, \"min_s\": {}, \"runs\": {}, \"valid\": {}, "
                         "\"note\": {}}}",
                         i ? "," : "", json::quote(c.schedule), json::quote(c.backend), fields,
                         number(c.medianSeconds), number(c.minSeconds), c.runs,
                         c.valid ? "true" : "false", json::quote(c.note));
    }
    out += "]}";
  }
  out += "\n]}\n";
  return out;
}

std::string sweepSvg(std::span<const SweepGroup> sweep, const SweepPlotOptions &options) {
  double height = std::max<double>(1, double(sweep.size())) * kPanelHeight;
  std::string out = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" "
      "width=\"{}\" height=\"{}\" viewBox=\"0 0 {} {}\" font-family=\"sans-serif\">\n",
      kPanelWidth, height, kPanelWidth, height);
  for (size_t g = 0; g < sweep.size(); ++g)
    out += svgPanel(sweep[g], options, double(g) * kPanelHeight);
  out += "</svg>\n";
  return out;
}

} // namespace kiln::tuning
