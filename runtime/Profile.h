// What a profiled run records: one timed event per kernel launch, copy and
// collective, for `kiln run --profile` and its Chrome-trace timeline.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kiln::runtime {

enum class ProfileCategory {
  Kernel,
  CopyToDevice,
  CopyToHost,
  Graph,
  Communication, ///< a bucket's all-reduce on the communication thread or stream
};

struct ProfileEvent {
  std::string name;          ///< the kernel's name, "inputs", "outputs", "graph", or
                             ///< "all_reduce bucket K" (the plan's K-th collective)
  ProfileCategory category = ProfileCategory::Kernel;
  int step = -1;             ///< Kernel, Communication: the launch plan's step index
  double startMs = 0;        ///< from the start of the run
  double durationMs = 0;
  int64_t bytes = 0;         ///< copies: bytes copied; Communication: bytes reduced
  int64_t elements = 0;      ///< Communication: elements reduced
};

/// Filled by CompiledModel::run when RunOptions::profile points at one.
struct RunProfile {
  std::string device;  ///< Device::describe(), or the CPU's description
  double totalMs = 0;  ///< the whole run, wall clock
  /// Kernels and copies in the order they ran; a run's collectives follow
  /// them, in plan order (they ran beside the kernels).
  std::vector<ProfileEvent> events;
};

} // namespace kiln::runtime
