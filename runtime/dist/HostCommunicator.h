// The host communicator a program starts from: MPI when an MPI launcher started
// it, a single process otherwise (which needs neither MPI nor NCCL).
#pragma once

#include "runtime/dist/Communicator.h"
#include "runtime/dist/CommunicatorOptions.h"

#include <memory>

namespace kiln::runtime::dist {

/// Whether mpirun (or another MPI launcher: Hydra, PMIx, Slurm's PMI) started this
/// process, judged by the variables launchers set for their ranks.
bool launchedByMpi();

/// The communicator `options.backend` selects (Auto: MPI under an MPI launcher, else
/// a single process). Errors say which library is missing and why.
Expected<std::unique_ptr<Communicator>> openHostCommunicator(const CommunicatorOptions &options = {});

} // namespace kiln::runtime::dist
