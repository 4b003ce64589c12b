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
#include "support/FloatConvert.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <random>
#include <thread>
#include <vector>

using namespace kiln;
using namespace kiln::runtime::dist;
using kiln::test::ScopedEnv;

namespace {

std::unique_ptr<Communicator> theCommunicator;

Communicator &communicator() { return *theCommunicator; }

/// Element counts: one, odd ones below and above a page, and one past 2^16.
const std::vector<int64_t> kCounts{1, 7, 1001, 65537};

/// A buffer of `count` elements of `dtype`, with values read and written as doubles.
struct Buffer {
  DType dtype;
  std::vector<std::byte> bytes;

  Buffer(DType type, int64_t count)
      : dtype(type), bytes(static_cast<size_t>(count * dtypeByteSize(type))) {}
  int64_t count() const { return static_cast<int64_t>(bytes.size()) / dtypeByteSize(dtype); }
  void *data() { return bytes.data(); }

  template <typename T> T &at(int64_t i) { return reinterpret_cast<T *>(bytes.data())[i]; }
  double get(int64_t i) {
    switch (dtype) {
    case DType::F64: return at<double>(i);
    case DType::F32: return at<float>(i);
    case DType::F16: return halfBitsToFloat(at<uint16_t>(i));
    case DType::BF16: return bfloat16BitsToFloat(at<uint16_t>(i));
    case DType::I64: return static_cast<double>(at<int64_t>(i));
    case DType::I32: return at<int32_t>(i);
    case DType::I8: return at<int8_t>(i);
    default: FAIL("no test encoding for " << dtypeName(dtype)); return 0;
    }
  }
  void set(int64_t i, double value) {
    switch (dtype) {
    case DType::F64: at<double>(i) = value; break;
    case DType::F32: at<float>(i) = static_cast<float>(value); break;
    case DType::F16: at<uint16_t>(i) = doubleToHalfBits(value); break;
    case DType::BF16: at<uint16_t>(i) = doubleToBFloat16Bits(value); break;
    case DType::I64: at<int64_t>(i) = static_cast<int64_t>(value); break;
    case DType::I32: at<int32_t>(i) = static_cast<int32_t>(value); break;
    case DType::I8: at<int8_t>(i) = static_cast<int8_t>(value); break;
    default: FAIL("no test encoding for " << dtypeName(dtype));
    }
  }
};

/// Rank `rank`'s input for case `salt`: every rank can make every other rank's.
/// Floats in [-2, 2), integers in [-1000, 1000] (i8: [-100, 100]).
Buffer seededInput(int rank, DType dtype, int64_t count, uint64_t salt) {
  std::mt19937_64 engine(0x6b696c6eULL * (salt + 1) + static_cast<uint64_t>(rank) * 7919);
  Buffer buffer(dtype, count);
  std::uniform_real_distribution<double> real(-2.0, 2.0);
  int64_t bound = dtype == DType::I8 ? 100 : 1000;
  std::uniform_int_distribution<int64_t> integer(-bound, bound);
  for (int64_t i = 0; i < count; ++i)
    buffer.set(i, isFloatingPoint(dtype) ? real(engine) : static_cast<double>(integer(engine)));
  return buffer;
}

/// How far a reduced element may be from the exact sum of the stored inputs, relative
/// to the sum of their magnitudes: the accumulation (f32 for the 16-bit types, in any
/// order) plus the final rounding to the buffer's type.
double relativeTolerance(DType dtype) {
  switch (dtype) {
  case DType::F64: return 1e-14;
  case DType::F32: return 1e-6;
  case DType::F16: return std::ldexp(1.0, -10);
  case DType::BF16: return std::ldexp(1.0, -7);
  default: return 0; // integers are exact
  }
}

void checkAllReduce(DType dtype, ReduceOp op, uint64_t salt) {
  Communicator &comm = communicator();
  for (int64_t count : kCounts) {
    CAPTURE(dtypeName(dtype), reduceOpName(op), count, comm.rank(), comm.size());
    Buffer buffer = seededInput(comm.rank(), dtype, count, salt + static_cast<uint64_t>(count));
    auto reduced = comm.allReduce(buffer.data(), count, dtype, op);
    if (!reduced)
      FAIL(reduced.error().str());
    std::vector<Buffer> inputs;
    for (int rank = 0; rank < comm.size(); ++rank)
      inputs.push_back(seededInput(rank, dtype, count, salt + static_cast<uint64_t>(count)));
    int64_t wrong = 0;
    for (int64_t i = 0; i < count; ++i) {
      double sum = 0, magnitude = 0;
      for (Buffer &input : inputs) {
        sum += input.get(i);
        magnitude += std::abs(input.get(i));
      }
      double expected = op == ReduceOp::Mean ? sum / comm.size() : sum;
      double scale = op == ReduceOp::Mean ? magnitude / comm.size() : magnitude;
      double error = std::abs(buffer.get(i) - expected);
      if (!(error <= relativeTolerance(dtype) * scale)) {
        if (++wrong <= 3)
          UNSCOPED_INFO("element " << i << ": got " << buffer.get(i) << ", expected " << expected);
      }
    }
    CHECK(wrong == 0);
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
