// One rank misbehaves in a collective, the others must fail with an error naming
// it, within the timeout: run by tests/dist/mpirun-test.sh under mpirun, which
// counts the survivors' "PASS" lines (mpirun's own status cannot tell, since the
// victim's exit is part of the scenario).
//
//   dist_fault_probe exit       the last rank exits instead of joining an all-reduce
//   dist_fault_probe hang       the last rank sleeps past the timeout
//   dist_fault_probe mismatch   the last rank calls broadcast where the others all-reduce
#include "runtime/dist/CommunicatorOptions.h"
#include "runtime/dist/HostCommunicator.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <string_view>
#include <thread>
#include <unistd.h>

using namespace kiln;
using namespace kiln::runtime::dist;

namespace {

[[noreturn]] void finish(int rank, bool passed, const std::string &what) {
  std::printf("kiln-dist-probe: rank %d: %s: %s\n", rank, passed ? "PASS" : "FAIL", what.c_str());
  std::fflush(stdout);
  // No MPI_Finalize: it waits for every rank, and one is gone or stuck.
  _exit(passed ? 0 : 1);
}

} // namespace

int main(int argc, char *argv[]) {
  std::string_view scenario = argc > 1 ? argv[1] : "";
  if (scenario != "exit" && scenario != "hang" && scenario != "mismatch") {
    std::fprintf(stderr, "usage: dist_fault_probe exit|hang|mismatch\n");
    return 2;
  }
  auto opened = openHostCommunicator();
  if (!opened) {
    std::fprintf(stderr, "%s", opened.error().diagnosticStr("dist_fault_probe").c_str());
    return 1;
  }
  Communicator &comm = **opened;
  auto timeout = resolveTimeout({});
  int rank = comm.rank(), victim = comm.size() - 1;
  if (comm.size() < 2 || !timeout)
    finish(rank, false, "needs two ranks or more and a valid KILN_DIST_TIMEOUT");

  float values[5] = {1, 2, 3, 4, 5};
  if (auto warmUp = comm.allReduce(values, 5, DType::F32, ReduceOp::Sum); !warmUp)
    finish(rank, false, "the first all-reduce failed: " + warmUp.error().message());

  auto start = std::chrono::steady_clock::now();
  if (rank == victim) {
    if (scenario == "exit") {
      std::printf("kiln-dist-probe: rank %d exits instead of joining the all-reduce\n", rank);
      std::fflush(stdout);
      _exit(3);
    }
    if (scenario == "hang") {
      std::this_thread::sleep_for(*timeout + std::chrono::milliseconds(500));
      finish(rank, true, "the victim woke up");
    }
  }
  Expected<void> result = scenario == "mismatch" && rank == victim
                              ? comm.broadcast(values, 5, DType::F32, 0)
                              : comm.allReduce(values, 5, DType::F32, ReduceOp::Sum);
  auto waited = std::chrono::steady_clock::now() - start;
  if (result)
    finish(rank, false, "the collective succeeded");
  const std::string &message = result.error().message();
  std::string expected =
      scenario == "mismatch"
          ? (rank == victim ? std::string("called allReduce")
                            : fmt::format("rank {} called broadcast", victim))
          : fmt::format("rank {} did not arrive", victim);
  if (message.find(expected) == std::string::npos)
    finish(rank, false, fmt::format("the error does not say '{}': {}", expected, message));
  // Within the timeout, and a little for the poll and the scheduler.
  if (waited > *timeout + std::chrono::seconds(2))
    finish(rank, false, fmt::format("it failed only after {} ms: {}",
                                    std::chrono::duration_cast<std::chrono::milliseconds>(waited)
                                        .count(),
                                    message));
  // A communicator aborted by the failure refuses the next call at once.
  if (auto after = comm.barrier(); after || !comm.aborted())
    finish(rank, false, "the communicator was not aborted after the failure");
  finish(rank, true, message);
}
