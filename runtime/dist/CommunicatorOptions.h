// What opening a communicator takes: the collective timeout, and which
// implementation to use. The timeout defaults to 60 s, or $KILN_DIST_TIMEOUT.
#pragma once

#include "support/Error.h"

#include <chrono>
#include <optional>

namespace kiln::runtime::dist {

/// How long a collective waits for its peers by default.
inline constexpr std::chrono::milliseconds kDefaultCollectiveTimeout{60'000};

/// Which host communicator openHostCommunicator() gives.
enum class HostBackend {
  Auto,   ///< MPI when an MPI launcher started this process, else a single process
  Single, ///< a single process, whatever the environment says
  Mpi,    ///< MPI (the libkiln_mpi plugin), or an error saying why not
};

struct CommunicatorOptions {
  /// How long a collective waits for every peer before it fails naming the missing
  /// ones. Unset: $KILN_DIST_TIMEOUT (seconds, e.g. "2" or "0.5"), else 60 s.
  std::optional<std::chrono::milliseconds> timeout;
  HostBackend backend = HostBackend::Auto;
};

/// The timeout `options` give: its own, else $KILN_DIST_TIMEOUT, else 60 s. A value
/// that is not a positive number of seconds is an InvalidArgument naming it.
Expected<std::chrono::milliseconds> resolveTimeout(const CommunicatorOptions &options);

} // namespace kiln::runtime::dist
