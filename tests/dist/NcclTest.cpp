// The NCCL communicator: its dlopen layer's errors (a library that is missing or
// is not NCCL, NCCL present but no usable GPU) everywhere, and its collectives on
// device buffers where every rank has a GPU (skipped, saying so, elsewhere).
// Part of test_dist, so the cases run alone and under mpirun -np 1, 2 and 3.
#include "runtime/cuda/CudaDevice.h"
#include "runtime/dist/NcclCommunicator.h"
#include "runtime/dist/NcclLibrary.h"
#include "ScopedEnv.h"
#include "dist/SeededBuffers.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>

using namespace kiln;
using namespace kiln::runtime;
using namespace kiln::runtime::dist;
using kiln::test::ScopedEnv;
using namespace kiln::test::dist;

TEST_CASE("a missing NCCL is an error naming the library, on every rank", "[dist][nccl]") {
  ScopedEnv missingNccl("KILN_LIBNCCL", "/nonexistent/libnccl.so.2");
  CHECK(libncclCandidates() == std::vector<std::string>{"/nonexistent/libnccl.so.2"});
  auto library = ncclLibrary();
  REQUIRE_FALSE(library);
  CHECK(library.error().code() == ErrorCode::Unavailable);
  CHECK_THAT(library.error().message(),
             Catch::Contains("NCCL is unavailable: KILN_LIBNCCL=/nonexistent/libnccl.so.2"));
  CHECK_THAT(library.error().message(), Catch::Contains("No such file or directory"));

  // Every rank lacks it, so every rank fails with its own reason (none waits for another).
  Communicator &host = communicator();
  auto opened = openNcclCommunicator(host, host.rank());
  REQUIRE_FALSE(opened);
  CHECK_THAT(opened.error().message(),
             Catch::Contains(fmt::format("opening NCCL on {}: NCCL is unavailable: KILN_LIBNCCL=",
                                         describeRank(host))));
  REQUIRE(host.barrier());
}

TEST_CASE("a library that is not NCCL is refused, naming what it lacks", "[dist][nccl]") {
  ScopedEnv foreignNccl("KILN_LIBNCCL", "libc.so.6");
  auto library = ncclLibrary();
  REQUIRE_FALSE(library);
  CHECK_THAT(library.error().message(),
             Catch::Contains("libc.so.6 is not a usable NCCL 2: it lacks ncclGetVersion"));
}

TEST_CASE("NCCL without a usable GPU is an error saying which GPU and why", "[dist][nccl]") {
  ScopedEnv defaultNccl("KILN_LIBNCCL", nullptr);
  Communicator &host = communicator();
  auto library = ncclLibrary();
  auto device = cuda::openCudaDevice(host.rank());
  // Whether this path is reachable is the same on every rank of one machine.
  if (!library) {
    WARN("skipped: NCCL is not installed here: " << library.error().message());
    SUCCEED();
    return;
  }
  CHECK((*library)->version >= 21000);
  CHECK_THAT((*library)->versionText(), Catch::StartsWith("2."));
  if (device) {
    WARN("skipped: GPU " << host.rank() << " is usable, so there is no missing-GPU error to see");
    SUCCEED();
    return;
  }
  auto opened = openNcclCommunicator(host, host.rank());
  REQUIRE_FALSE(opened);
  CHECK(opened.error().code() == ErrorCode::Unavailable);
  CHECK_THAT(opened.error().message(),
             Catch::Contains(fmt::format("opening NCCL on {}: NCCL needs GPU {}: {}",
                                         describeRank(host), host.rank(),
                                         device.error().message())));
  REQUIRE(host.barrier());
}

TEST_CASE("NCCL all-reduce and broadcast on device buffers match every rank's seeded inputs",
          "[dist][nccl][gpu]") {
  ScopedEnv defaultNccl("KILN_LIBNCCL", nullptr);
  Communicator &host = communicator();
  // One GPU per rank, or every rank skips: the decision must be the same everywhere.
  auto library = ncclLibrary();
  auto device = cuda::openCudaDevice(host.rank());
  int32_t unusable = library && device ? 0 : 1;
  REQUIRE(host.allReduce(&unusable, 1, DType::I32, ReduceOp::Sum));
  if (unusable > 0) {
    WARN("skipped: " << unusable << " of " << host.size() << " ranks have no NCCL or no GPU of "
                     "their own (this rank: "
                     << (!library ? library.error().message()
                                  : !device ? device.error().message() : "ready")
                     << ")");
    SUCCEED();
    return;
  }
  auto opened = openNcclCommunicator(host, host.rank());
  if (!opened)
    FAIL(opened.error().str());
  NcclCommunicator &nccl = **opened;
  CHECK(nccl.memorySpace() == MemorySpace::Device);
  CHECK(nccl.rank() == host.rank());
  cuda::CudaDevice &gpu = nccl.device();

  auto roundTrip = [&](Buffer &buffer, auto collective) {
    int64_t bytes = static_cast<int64_t>(buffer.bytes.size());
    auto address = gpu.allocate(bytes);
    REQUIRE(address);
    REQUIRE(gpu.copyToDevice(*address, buffer.data(), bytes, Stream{}));
    auto ran = collective(reinterpret_cast<void *>(*address));
    if (!ran)
      FAIL(ran.error().str());
    auto synchronized = nccl.synchronize(Stream{});
    if (!synchronized)
      FAIL(synchronized.error().str());
    REQUIRE(gpu.copyToHost(buffer.data(), *address, bytes, Stream{}));
    REQUIRE(gpu.synchronize(Stream{}));
    gpu.free(*address);
  };

  for (auto [dtype, op] : {std::pair{DType::F32, ReduceOp::Sum}, {DType::F32, ReduceOp::Mean},
                           {DType::BF16, ReduceOp::Sum}})
    for (int64_t count : kCounts) {
      CAPTURE(dtypeName(dtype), reduceOpName(op), count, host.rank());
      uint64_t salt = 40 + static_cast<uint64_t>(count);
      Buffer buffer = seededInput(host.rank(), dtype, count, salt);
      roundTrip(buffer, [&](void *data) { return nccl.allReduce(data, count, dtype, op); });
      checkReduced(buffer, host.size(), op, salt);
    }
  for (int root : {0, host.size() - 1}) {
    Buffer buffer = seededInput(host.rank(), DType::F32, 1001, 60 + root);
    roundTrip(buffer, [&](void *data) { return nccl.broadcast(data, 1001, DType::F32, root); });
    CHECK(buffer.bytes == seededInput(root, DType::F32, 1001, 60 + root).bytes);
  }
}
