// Printing and Markdown of the GPU benchmark's tables and goals.
#include "bench/gpu/BenchReport.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>

namespace kiln::bench {

std::string_view goalStatusName(GoalStatus status) {
  switch (status) {
  case GoalStatus::Met: return "met";
  case GoalStatus::Missed: return "MISSED";
  case GoalStatus::NotMeasured: return "not measured";
  }
  return "?";
}

std::string formatFixedWidth(const Table &table) {
  std::vector<size_t> widths;
  for (const std::string &column : table.columns)
    widths.push_back(column.size());
  for (const auto &row : table.rows)
    for (size_t i = 0; i < row.size() && i < widths.size(); ++i)
      widths[i] = std::max(widths[i], row[i].size());
  auto line = [&](const std::vector<std::string> &cells) {
    std::string out;
    for (size_t i = 0; i < widths.size(); ++i) {
      const std::string cell = i < cells.size() ? cells[i] : "";
      // The first column names the row: left-aligned; figures right-aligned.
      out += i == 0 ? fmt::format("{:<{}}", cell, widths[i]) : fmt::format("  {:>{}}", cell, widths[i]);
    }
    return out + "\n";
  };
  std::string out = fmt::format("== {}\n", table.title);
  out += line(table.columns);
  size_t total = 0;
  for (size_t width : widths)
    total += width + 2;
  out += std::string(total > 2 ? total - 2 : 0, '-') + "\n";
  for (const auto &row : table.rows)
    out += line(row);
  if (!table.note.empty())
    out += table.note + "\n";
  return out;
}

void BenchReport::addTable(Table table) {
  std::fputs(formatFixedWidth(table).c_str(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
  tables_.push_back(std::move(table));
  changed();
}

void BenchReport::addGoal(Goal goal) {
  goals_.push_back(std::move(goal));
  changed();
}

void BenchReport::addFailure(std::string what) {
  std::fprintf(stderr, "kiln_gpu_bench: %s\n", what.c_str());
  failures_.push_back(std::move(what));
  changed();
}

namespace {

std::string markdownTable(const Table &table) {
  auto escape = [](const std::string &cell) {
    std::string out;
    for (char c : cell)
      out += c == '|' ? std::string("\\|") : std::string(1, c);
    return out;
  };
  std::string out = fmt::format("## {}\n\n", table.title);
  out += "|";
  for (const std::string &column : table.columns)
    out += " " + escape(column) + " |";
  out += "\n|";
  for (size_t i = 0; i < table.columns.size(); ++i)
    out += i == 0 ? "---|" : "---:|";
  out += "\n";
  for (const auto &row : table.rows) {
    out += "|";
    for (const std::string &cell : row)
      out += " " + escape(cell) + " |";
    out += "\n";
  }
  if (!table.note.empty())
    out += "\n" + table.note + "\n";
  return out + "\n";
}

} // namespace

std::string BenchReport::markdown(const std::string &title,
                                  const std::vector<std::string> &headerLines) const {
  std::string out = fmt::format("# {}\n\n", title);
  for (const std::string &line : headerLines)
    out += "- " + line + "\n";
  out += "\n## Goals\n\n| goal | target | measured | status |\n|---|---|---|:---:|\n";
  for (const Goal &goal : goals_)
    out += fmt::format("| {} | {} | {} | {} |\n", goal.name, goal.target, goal.measured,
                       goal.status == GoalStatus::Missed ? "**MISSED**"
                                                         : std::string(goalStatusName(goal.status)));
  out += "\n";
  for (const Table &table : tables_)
    out += markdownTable(table);
  if (!failures_.empty()) {
    out += "## Failures\n\n";
    for (const std::string &failure : failures_)
      out += "- " + failure + "\n";
    out += "\n";
  }
  return out;
}

} // namespace kiln::bench
