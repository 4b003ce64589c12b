// The GPU benchmark's findings: fixed-width tables printed as each section
// ends, the goals with their verdicts, and the Markdown file they all go to.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace kiln::bench {

struct Table {
  std::string title;
  std::vector<std::string> columns;
  std::string note; ///< printed under the table: how the figures were taken
  std::vector<std::vector<std::string>> rows = {};
};

enum class GoalStatus { Met, Missed, NotMeasured };

/// One goal of bench/README.md against what this run measured.
struct Goal {
  std::string name;     ///< e.g. "softmax vs copy bandwidth (>= 256 MiB)"
  std::string target;   ///< e.g. ">= 80%"
  std::string measured = {}; ///< e.g. "83% (worst of 2 sizes)", or why nothing was measured
  GoalStatus status = GoalStatus::NotMeasured;
};

class BenchReport {
public:
  /// Prints `table` to stdout now and keeps it for the Markdown file.
  void addTable(Table table);
  void addGoal(Goal goal);
  /// A check that failed or a section that could not run; the exit status becomes 1.
  void addFailure(std::string what);
  bool failed() const { return !failures_.empty(); }

  /// The whole report: `headerLines` (already Markdown list items), the
  /// goals, the tables and the failures.
  std::string markdown(const std::string &title, const std::vector<std::string> &headerLines) const;

  /// Called after each table, goal and failure is added: the run writes its file so far, so a
  /// run stopped from outside (a kernel that never returns, a time limit) keeps what finished.
  void onChange(std::function<void()> callback) { onChange_ = std::move(callback); }

private:
  void changed() const {
    if (onChange_)
      onChange_();
  }

  std::function<void()> onChange_;
  std::vector<Table> tables_;
  std::vector<Goal> goals_;
  std::vector<std::string> failures_;
};

/// The table as aligned text columns, for the terminal.
std::string formatFixedWidth(const Table &table);

std::string_view goalStatusName(GoalStatus status);

} // namespace kiln::bench
