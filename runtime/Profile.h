// What a profiled run records: one timed event per kernel launch and copy, in
// the order they ran, for `kiln run --profile` and its Chrome-trace timeline.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::runtime {

enum class ProfileCategory { Kernel, CopyToDevice, CopyToHost, Graph };

struct ProfileEvent {
  std::string name;          ///< the kernel's name, or "inputs", "outputs", "graph"
  ProfileCategory category = ProfileCategory::Kernel;
  int step = -1;             ///< Kernel: the launch plan's step index
  double startMs = 0;        ///< from the start of the run
  double durationMs = 0;
  int64_t bytes = 0;         ///< copies: bytes copied
};

/// Filled by CompiledModel::run when RunOptions::profile points at one.
struct RunProfile {
  std::string device;  ///< Device::describe(), or the CPU's description
  double totalMs = 0;  ///< the whole run, wall clock
  std::vector<ProfileEvent> events;
};

} // namespace kiln::runtime
