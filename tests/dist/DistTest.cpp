// The host communicator's collectives, run by every rank of `mpirun -np N` (and
// alone, as a single process): each rank regenerates every rank's seeded inputs,
// so it can check all-reduce and broadcast against values computed locally.
// Every rank runs the same cases in the same order; a rank that fails a case and
// skips a collective makes the others time out, naming it, instead of hanging.
#define CATCH_CONFIG_RUNNER
#include "runtime/dist/CommunicatorOptions.h"
#include "runtime/dist/HostCommunicator.h"
#include "runtime/dist/MpiPlugin.h"
#include "runtime/dist/ProgramHash.h"
#include "runtime/dist/SingleProcessCommunicator.h"
#include "ScopedEnv.h"
#include "dist/SeededBuffers.h"
#include "support/FloatConvert.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <thread>
#include <vector>

using namespace kiln;
using namespace kiln::runtime::dist;
using kiln::test::ScopedEnv;
using namespace kiln::test::dist;

namespace kiln::test::dist {
std::unique_ptr<Communicator> theCommunicator;
Communicator &communicator() { return *theCommunicator; }
} // namespace kiln::test::dist

namespace {

void checkAllReduce(DType dtype, ReduceOp op, uint64_t salt) {
  Communicator &comm = communicator();
  for (int64_t count : kCounts) {
    CAPTURE(dtypeName(dtype), reduceOpName(op), count, comm.rank(), comm.size());
    uint64_t caseSalt = salt + static_cast<uint64_t>(count);
    Buffer buffer = seededInput(comm.rank(), dtype, count, caseSalt);
    auto reduced = comm.allReduce(buffer.data(), count, dtype, op);
    if (!reduced)
      FAIL(reduced.error().str());
    checkReduced(buffer, comm.size(), op, caseSalt);
  }
}

} // namespace

TEST_CASE("allReduce sums and averages f32 and f64 buffers of odd sizes", "[dist]") {
  checkAllReduce(DType::F32, ReduceOp::Sum, 1);
  checkAllReduce(DType::F32, ReduceOp::Mean, 2);
  checkAllReduce(DType::F64, ReduceOp::Sum, 3);
  checkAllReduce(DType::F64, ReduceOp::Mean, 4);
}

TEST_CASE("allReduce sums f16 and bf16 buffers in f32, rounding once", "[dist]") {
  checkAllReduce(DType::F16, ReduceOp::Sum, 5);
  checkAllReduce(DType::F16, ReduceOp::Mean, 6);
  checkAllReduce(DType::BF16, ReduceOp::Sum, 7);
  checkAllReduce(DType::BF16, ReduceOp::Mean, 8);
}

TEST_CASE("allReduce sums integer buffers exactly", "[dist]") {
  checkAllReduce(DType::I64, ReduceOp::Sum, 9);
  checkAllReduce(DType::I32, ReduceOp::Sum, 10);
}

TEST_CASE("broadcast copies the root's buffer to every rank, from every root", "[dist]") {
  Communicator &comm = communicator();
  for (DType dtype : {DType::F32, DType::BF16, DType::I8})
    for (int root = 0; root < comm.size(); ++root) {
      int64_t count = 1001 + root;
      CAPTURE(dtypeName(dtype), root, comm.rank());
      // Every rank starts from its own values, so a broadcast that did nothing fails.
      Buffer buffer = seededInput(comm.rank(), dtype, count, 20 + root);
      auto sent = comm.broadcast(buffer.data(), count, dtype, root);
      if (!sent)
        FAIL(sent.error().str());
      Buffer expected = seededInput(root, dtype, count, 20 + root);
      CHECK(buffer.bytes == expected.bytes);
    }
}

TEST_CASE("empty collectives take no buffer and keep the ranks in step", "[dist]") {
  Communicator &comm = communicator();
  REQUIRE(comm.allReduce(nullptr, 0, DType::F32, ReduceOp::Sum));
  REQUIRE(comm.allReduce(nullptr, 0, DType::BF16, ReduceOp::Mean));
  REQUIRE(comm.broadcast(nullptr, 0, DType::I8, comm.size() - 1));
  // The next collective still pairs up: the empty ones were counted alike everywhere.
  int64_t one = 1;
  REQUIRE(comm.allReduce(&one, 1, DType::I64, ReduceOp::Sum));
  CHECK(one == comm.size());
}

TEST_CASE("a barrier returns only once every rank has reached it", "[dist]") {
  Communicator &comm = communicator();
  constexpr auto kLateBy = std::chrono::milliseconds(300);
  // The last rank arrives late; rank 0 must not leave before it came.
  if (comm.rank() == comm.size() - 1 && comm.size() > 1)
    std::this_thread::sleep_for(kLateBy);
  auto start = std::chrono::steady_clock::now();
  auto met = comm.barrier();
  auto waited = std::chrono::steady_clock::now() - start;
  if (!met)
    FAIL(met.error().str());
  if (comm.rank() == 0 && comm.size() > 1)
    CHECK(waited >= kLateBy - std::chrono::milliseconds(50));
  for (int i = 0; i < 3; ++i)
    REQUIRE(comm.barrier());
}

TEST_CASE("the program hash check passes when every rank agrees", "[dist]") {
  auto agreed = verifySameProgram(communicator(), 0x0123456789abcdefULL);
  if (!agreed)
    FAIL(agreed.error().str());
  SUCCEED();
}

TEST_CASE("a different program hash on one rank fails on every rank, naming it", "[dist]") {
  Communicator &comm = communicator();
  if (comm.size() == 1) {
    WARN("skipped: a mismatch needs two ranks (run under mpirun -np 2 or more)");
    SUCCEED();
    return;
  }
  int odd = comm.size() - 1;
  uint64_t hash = comm.rank() == odd ? 0xfeedfacecafebeefULL : 0x0123456789abcdefULL;
  auto agreed = verifySameProgram(comm, hash);
  REQUIRE_FALSE(agreed);
  CHECK(agreed.error().code() == ErrorCode::InvalidArgument);
  const std::string &message = agreed.error().message();
  CHECK_THAT(message, Catch::Contains(fmt::format("rank {} has feedfacecafebeef", odd)));
  CHECK_THAT(message, Catch::Contains("0123456789abcdef"));
  // The communicator is still usable: a mismatch is the program's, not the group's.
  REQUIRE(comm.barrier());
}

TEST_CASE("bad collective arguments are errors naming the call and the rank", "[dist]") {
  Communicator &comm = communicator();
  float value = 1;
  auto negative = comm.allReduce(&value, -1, DType::F32, ReduceOp::Sum);
  REQUIRE_FALSE(negative);
  CHECK(negative.error().code() == ErrorCode::InvalidArgument);
  CHECK_THAT(negative.error().message(),
             Catch::Contains(fmt::format("allReduce on rank {} of {}", comm.rank(), comm.size())));
  CHECK_THAT(negative.error().message(), Catch::Contains("negative element count -1"));

  auto root = comm.broadcast(&value, 1, DType::F32, comm.size());
  REQUIRE_FALSE(root);
  CHECK_THAT(root.error().message(),
             Catch::Contains(fmt::format("root rank {} is outside 0..{}", comm.size(),
                                         comm.size() - 1)));

  int32_t integer = 3;
  auto mean = comm.allReduce(&integer, 1, DType::I32, ReduceOp::Mean);
  REQUIRE_FALSE(mean);
  CHECK_THAT(mean.error().message(), Catch::Contains("a mean needs a floating-point buffer"));
  // None of these reached the peers: the group still works.
  REQUIRE(comm.barrier());
}

TEST_CASE("openHostCommunicator gives MPI under mpirun and a single process otherwise",
          "[dist]") {
  Communicator &comm = communicator();
  CHECK(comm.memorySpace() == MemorySpace::Host);
  if (launchedByMpi())
    CHECK(comm.backendName() == "MPI");
  else {
    CHECK(comm.backendName() == "single process");
    CHECK(comm.size() == 1);
    // Nothing kiln links pulls in MPI: alone, this process has no libmpi mapped.
    std::ifstream maps("/proc/self/maps");
    std::string line;
    bool sawMpi = false;
    while (std::getline(maps, line))
      sawMpi = sawMpi || line.find("libmpi.so") != std::string::npos;
    CHECK_FALSE(sawMpi);
  }
  CHECK(comm.rank() >= 0);
  CHECK(comm.rank() < comm.size());
}

TEST_CASE("a single process reduces and broadcasts to itself and needs no library", "[dist]") {
  // Whatever $KILN_MPI_PLUGIN says, the single-process communicator loads nothing.
  ScopedEnv plugin("KILN_MPI_PLUGIN", "/nonexistent/libkiln_mpi.so");
  CommunicatorOptions options;
  options.backend = HostBackend::Single;
  auto opened = openHostCommunicator(options);
  REQUIRE(opened);
  Communicator &single = **opened;
  CHECK(single.rank() == 0);
  CHECK(single.size() == 1);
  Buffer buffer = seededInput(0, DType::F32, 7, 30);
  Buffer original = buffer;
  REQUIRE(single.allReduce(buffer.data(), 7, DType::F32, ReduceOp::Mean));
  REQUIRE(single.broadcast(buffer.data(), 7, DType::F32, 0));
  CHECK(buffer.bytes == original.bytes);
  REQUIRE(single.barrier());
  REQUIRE(verifySameProgram(single, 42));
  single.abort();
  auto after = single.allReduce(buffer.data(), 7, DType::F32, ReduceOp::Sum);
  REQUIRE_FALSE(after);
  CHECK_THAT(after.error().message(), Catch::Contains("aborted"));
}

TEST_CASE("the collective timeout comes from the options, then KILN_DIST_TIMEOUT, then 60 s",
          "[dist]") {
  using std::chrono::milliseconds;
  {
    ScopedEnv unset("KILN_DIST_TIMEOUT", nullptr);
    CHECK(resolveTimeout({}) == milliseconds(60000));
  }
  ScopedEnv twoAndAHalf("KILN_DIST_TIMEOUT", "2.5");
  CHECK(resolveTimeout({}) == milliseconds(2500));
  CommunicatorOptions options;
  options.timeout = milliseconds(700);
  CHECK(resolveTimeout(options) == milliseconds(700));
  options.timeout = milliseconds(0);
  CHECK_FALSE(resolveTimeout(options));
  for (const char *bad : {"abc", "-1", "0", "2s", "1e9"}) {
    ScopedEnv value("KILN_DIST_TIMEOUT", bad);
    auto timeout = resolveTimeout({});
    REQUIRE_FALSE(timeout);
    CHECK(timeout.error().code() == ErrorCode::InvalidArgument);
    CHECK_THAT(timeout.error().message(),
               Catch::Contains(fmt::format("KILN_DIST_TIMEOUT='{}'", bad)));
  }
}

TEST_CASE("a missing or foreign MPI plugin is an error naming the file", "[dist]") {
  {
    ScopedEnv plugin("KILN_MPI_PLUGIN", "/nonexistent/libkiln_mpi.so");
    CHECK(mpiPluginCandidates() == std::vector<std::string>{"/nonexistent/libkiln_mpi.so"});
    auto opened = openMpiCommunicator({});
    REQUIRE_FALSE(opened);
    CHECK(opened.error().code() == ErrorCode::Unavailable);
    CHECK_THAT(opened.error().message(),
               Catch::Contains("MPI is unavailable: KILN_MPI_PLUGIN=/nonexistent/libkiln_mpi.so"));
    // dlerror()'s own words.
    CHECK_THAT(opened.error().message(), Catch::Contains("No such file or directory"));
  }
  {
    // A library that is not the plugin: libc has no entry point.
    ScopedEnv plugin("KILN_MPI_PLUGIN", "libc.so.6");
    auto opened = openMpiCommunicator({});
    REQUIRE_FALSE(opened);
    CHECK_THAT(opened.error().message(),
               Catch::Contains("libc.so.6 is not kiln's MPI plugin: it lacks kilnMpiPluginEntry"));
  }
  {
    ScopedEnv plugin("KILN_MPI_PLUGIN", nullptr);
    std::vector<std::string> candidates = mpiPluginCandidates();
    REQUIRE(candidates.size() >= 2);
    CHECK_THAT(candidates.front(), Catch::EndsWith("/libkiln_mpi.so"));
    CHECK(candidates.back() == "libkiln_mpi.so");
  }
}

int main(int argc, char *argv[]) {
  // Under mpirun this is MPI (the plugin must load); run alone, a single process.
  auto opened = openHostCommunicator();
  if (!opened) {
    std::fprintf(stderr, "test_dist: %s", opened.error().diagnosticStr("test_dist").c_str());
    return 1;
  }
  theCommunicator = std::move(*opened);
  int failures = Catch::Session().run(argc, argv);
  // Finalizes MPI (after a bounded barrier): every rank finishes the cases first.
  theCommunicator.reset();
  return failures;
}
