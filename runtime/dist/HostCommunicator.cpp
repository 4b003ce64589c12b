// Choosing the host communicator from the options and the launcher's environment.
#include "runtime/dist/HostCommunicator.h"

#include "runtime/dist/MpiPlugin.h"
#include "runtime/dist/SingleProcessCommunicator.h"

#include <cstdlib>

namespace kiln::runtime::dist {

bool launchedByMpi() {
  // Open MPI's mpirun, MPICH's Hydra (PMI), PMIx launchers (Open MPI 5, Slurm).
  for (const char *variable : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
    if (const char *value = std::getenv(variable); value && *value)
      return true;
  return false;
}

Expected<std::unique_ptr<Communicator>> openHostCommunicator(const CommunicatorOptions &options) {
  bool useMpi = options.backend == HostBackend::Mpi ||
                (options.backend == HostBackend::Auto && launchedByMpi());
  if (useMpi)
    return openMpiCommunicator(options);
  // The timeout is still checked, so a bad $KILN_DIST_TIMEOUT fails alike everywhere.
  KILN_TRY_VOID(resolveTimeout(options));
  return std::make_unique<SingleProcessCommunicator>();
}

} // namespace kiln::runtime::dist
