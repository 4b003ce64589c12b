// MPI as kiln uses it: a plugin, libkiln_mpi.so, built where CMake finds MPI and
// loaded with dlopen, so that kiln's libraries never link libmpi and a single
// process runs where MPI is not installed. The plugin is compiled against the
// mpi.h of the MPI it links, so it is tied to no one MPI's ABI.
#pragma once

#include "runtime/dist/Communicator.h"
#include "runtime/dist/CommunicatorOptions.h"

#include <chrono>
#include <memory>
#include <string>
#include <vector>

namespace kiln::runtime::dist {

/// The plugin's file name.
inline constexpr const char *kMpiPluginFileName = "libkiln_mpi.so";

/// What the plugin exports through its one C symbol, kMpiPluginEntrySymbol. The
/// plugin is built with kiln, so C++ types cross the boundary; `kilnVersion` must
/// equal the loading kiln's own, or the plugin is refused.
struct MpiPluginEntry {
  const char *kilnVersion = nullptr;
  /// Initializes MPI (MPI_THREAD_SERIALIZED: one thread at a time may call it) unless
  /// the program already has, and returns a communicator over MPI_COMM_WORLD whose
  /// collectives fail after `timeout` naming the ranks that did not arrive.
  Expected<std::unique_ptr<Communicator>> (*openWorld)(std::chrono::milliseconds timeout) =
      nullptr;
};

/// `extern "C" const MpiPluginEntry *kilnMpiPluginEntry()`.
inline constexpr const char *kMpiPluginEntrySymbol = "kilnMpiPluginEntry";

/// The MPI communicator over every rank mpirun started. Errors (ErrorCode::Unavailable)
/// name the plugin file and dlerror() when it, or the libmpi it needs, cannot be loaded.
Expected<std::unique_ptr<Communicator>> openMpiCommunicator(const CommunicatorOptions &options);

/// Where the plugin is looked for, in order: $KILN_MPI_PLUGIN alone when it is set;
/// otherwise beside libkiln_rt (the build tree and the installed lib directory),
/// beside the executable, then the dynamic loader's own search.
std::vector<std::string> mpiPluginCandidates();

} // namespace kiln::runtime::dist
