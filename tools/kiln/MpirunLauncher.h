// kiln train --nproc N: the command runs itself as N ranks under mpirun on this
// machine (docs/distributed.md, "Training across processes: the command").
#pragma once

#include "support/Error.h"

#include <string>
#include <vector>

namespace kiln::tool {

/// `words` without "--nproc N" / "--nproc=N": what each rank is given.
std::vector<std::string> withoutNproc(const std::vector<std::string> &words);

/// The mpirun command line that runs `kiln <command> <words>` (this executable) as
/// `ranks` processes here: --oversubscribe (more ranks than cores is allowed, as
/// for tests), and --allow-run-as-root when running as root (containers).
std::vector<std::string> mpirunCommandLine(const std::string &mpirun, int64_t ranks,
                                           const std::string &self, const std::string &command,
                                           const std::vector<std::string> &words);

/// Runs that command line with mpirun from $PATH and returns mpirun's exit status
/// (128 + the signal when a signal ended it). Unavailable when no mpirun is on $PATH,
/// saying where it looked and which package has it.
Expected<int> runUnderMpirun(int64_t ranks, const std::string &command,
                             const std::vector<std::string> &words);

} // namespace kiln::tool
