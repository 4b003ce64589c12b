// The bounded waits on NCCL (runtime/dist/NcclWait.cpp) against a stand-in entry
// table: nonblocking start-up polled until ready, a start-up or a stream that never
// finishes timing out (naming the rank and the collective, the communicator
// aborted), NCCL's asynchronous errors, and the blocking fallback of an NCCL
// without ncclCommInitRankConfig. No GPU and no peer needed.
#include "runtime/dist/NcclApi.h"
#include "runtime/dist/NcclLibrary.h"
#include "runtime/dist/SingleProcessCommunicator.h"

#include <catch2/catch.hpp>

#include <chrono>
#include <climits>

using namespace kiln;
using namespace kiln::runtime;
using namespace kiln::runtime::dist;
using namespace std::chrono_literals;

namespace {

/// What the stand-in NCCL answers, and what it was asked.
struct FakeNccl {
  int pollsInProgress = 0;               ///< ncclCommGetAsyncError says ncclInProgress this often
  ncclResult_t afterwards = ncclSuccess; ///< and then this
  ncclResult_t initReturns = ncclInProgress;
  int asyncQueries = 0, aborts = 0, configInits = 0, blockingInits = 0;
  int blockingSeen = -1; ///< config.blocking as ncclCommInitRankConfig got it
};
FakeNccl fake;
char commStorage;
ncclComm_t fakeComm() { return reinterpret_cast<ncclComm_t>(&commStorage); }

ncclResult_t fakeGetAsyncError(ncclComm_t, ncclResult_t *state) {
  ++fake.asyncQueries;
  *state = fake.asyncQueries <= fake.pollsInProgress ? ncclInProgress : fake.afterwards;
  return ncclSuccess;
}
ncclResult_t fakeInitRankConfig(ncclComm_t *comm, int, ncclUniqueId, int, ncclConfig_t *config) {
  ++fake.configInits;
  fake.blockingSeen = config->blocking;
  *comm = fakeComm();
  return fake.initReturns;
}
ncclResult_t fakeInitRank(ncclComm_t *comm, int, ncclUniqueId, int) {
  ++fake.blockingInits;
  *comm = fakeComm();
  return ncclSuccess;
}
ncclResult_t fakeAbort(ncclComm_t) {
  ++fake.aborts;
  return ncclSuccess;
}
const char *fakeErrorString(ncclResult_t result) {
  return result == ncclRemoteError ? "remote process exited or there was a network error"
                                   : "some other error";
}
const char *fakeLastError(ncclComm_t) { return "peer 1 closed the connection"; }

/// An NCCL made of the functions above, with `fake` reset.
NcclLibrary fakeLibrary(bool withConfigInit = true) {
  fake = {};
  auto api = std::make_unique<NcclApi>();
  api->ncclGetErrorString = fakeErrorString;
  api->ncclGetLastError = fakeLastError;
  api->ncclCommGetAsyncError = fakeGetAsyncError;
  api->ncclCommAbort = fakeAbort;
  api->ncclCommInitRank = fakeInitRank;
  if (withConfigInit)
    api->ncclCommInitRankConfig = fakeInitRankConfig;
  NcclLibrary library;
  library.libraryPath = "stand-in";
  library.version = 22809;
  library.api = std::move(api);
  return library;
}

/// Rank 0 of 2 whose peer is gone: its barrier fails naming it.
class MissingPeerHost final : public Communicator {
public:
  int rank() const override { return 0; }
  int size() const override { return 2; }
  MemorySpace memorySpace() const override { return MemorySpace::Host; }
  std::string_view backendName() const override { return "test"; }
  Expected<void> allReduce(void *, int64_t, DType, ReduceOp, Stream) override { return {}; }
  Expected<void> broadcast(void *, int64_t, DType, int, Stream) override { return {}; }
  Expected<void> barrier() override {
    ++barriers;
    return makeError(ErrorCode::Unavailable,
                     "barrier #1 on rank 0 of 2 (test) timed out after 0.05 s: rank 1 did not "
                     "arrive");
  }
  void abort() override {}
  bool aborted() const override { return false; }
  int barriers = 0;
};

double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

} // namespace

TEST_CASE("joining NCCL polls its nonblocking start-up until every rank is in",
          "[dist][nccl][wait]") {
  NcclLibrary library = fakeLibrary();
  fake.pollsInProgress = 5;
  SingleProcessCommunicator host;
  auto joined = joinNcclCommunicator(library, host, ncclUniqueId{}, 10s);
  REQUIRE(joined);
  CHECK(joined->comm == fakeComm());
  CHECK(joined->nonblocking);
  CHECK(fake.configInits == 1);
  CHECK(fake.blockingSeen == 0);
  CHECK(fake.blockingInits == 0);
  CHECK(fake.asyncQueries == 6);
  CHECK(fake.aborts == 0);
}

TEST_CASE("a start-up that never completes fails after the timeout, naming the rank, and "
          "aborts", "[dist][nccl][wait]") {
  NcclLibrary library = fakeLibrary();
  fake.pollsInProgress = INT_MAX;
  SingleProcessCommunicator host;
  auto started = std::chrono::steady_clock::now();
  auto joined = joinNcclCommunicator(library, host, ncclUniqueId{}, 50ms);
  double seconds = secondsSince(started);
  REQUIRE_FALSE(joined);
  CHECK(joined.error().code() == ErrorCode::Unavailable);
  CHECK(joined.error().message() == "start-up on rank 0 of 1 (single process) timed out after "
                                    "0.05 s (ncclCommInitRankConfig)");
  REQUIRE(joined.error().notes().size() == 1);
  CHECK_THAT(joined.error().notes()[0], Catch::Contains("every rank's host reached a barrier"));
  CHECK(fake.aborts == 1);
  CHECK(seconds >= 0.05);
  CHECK(seconds < 2.0);
  CHECK(fake.asyncQueries > 1);
}

TEST_CASE("an asynchronous error in start-up fails at once with NCCL's text, and aborts",
          "[dist][nccl][wait]") {
  NcclLibrary library = fakeLibrary();
  fake.pollsInProgress = 2;
  fake.afterwards = ncclRemoteError;
  SingleProcessCommunicator host;
  auto started = std::chrono::steady_clock::now();
  auto joined = joinNcclCommunicator(library, host, ncclUniqueId{}, 10s);
  REQUIRE_FALSE(joined);
  CHECK(secondsSince(started) < 2.0);
  CHECK(joined.error().code() == ErrorCode::Unavailable);
  CHECK(joined.error().message() ==
        "ncclCommInitRankConfig failed in start-up on rank 0 of 1 (single process): remote "
        "process exited or there was a network error (peer 1 closed the connection)");
  CHECK(fake.asyncQueries == 3);
  CHECK(fake.aborts == 1);
}

TEST_CASE("a start-up call that fails outright aborts what it created", "[dist][nccl][wait]") {
  NcclLibrary library = fakeLibrary();
  fake.initReturns = ncclInvalidArgument;
  SingleProcessCommunicator host;
  auto joined = joinNcclCommunicator(library, host, ncclUniqueId{}, 10s);
  REQUIRE_FALSE(joined);
  CHECK(joined.error().code() == ErrorCode::InvalidArgument);
  CHECK_THAT(joined.error().message(),
             Catch::StartsWith("ncclCommInitRankConfig failed in start-up on rank 0 of 1"));
  CHECK(fake.asyncQueries == 0);
  CHECK(fake.aborts == 1);
}

TEST_CASE("an NCCL without ncclCommInitRankConfig starts up blocking", "[dist][nccl][wait]") {
  NcclLibrary library = fakeLibrary(/*withConfigInit=*/false);
  SingleProcessCommunicator host;
  auto joined = joinNcclCommunicator(library, host, ncclUniqueId{}, 50ms);
  REQUIRE(joined);
  CHECK_FALSE(joined->nonblocking);
  CHECK(joined->comm == fakeComm());
  CHECK(fake.blockingInits == 1);
  CHECK(fake.configInits == 0);
  CHECK(fake.asyncQueries == 0);
}

TEST_CASE("a wait for a stream ends when its work finishes, and otherwise names the "
          "collective and the missing rank", "[dist][nccl][wait]") {
  NcclLibrary library = fakeLibrary();
  SingleProcessCommunicator rankOf;
  MissingPeerHost host;
  NcclWaitSite site{"synchronize", "allReduce #2 (5 f32, sum)"};

  SECTION("finishes") {
    int asked = 0;
    auto waited = waitForNccl(library, fakeComm(), rankOf, &host, 10s, site,
                              [&] { return Expected<bool>(++asked == 3); });
    REQUIRE(waited);
    CHECK(asked == 3);
    CHECK(fake.aborts == 0);
    CHECK(host.barriers == 0);
  }
  SECTION("never finishes") {
    auto started = std::chrono::steady_clock::now();
    auto waited = waitForNccl(library, fakeComm(), rankOf, &host, 50ms, site,
                              [] { return Expected<bool>(false); });
    REQUIRE_FALSE(waited);
    CHECK(secondsSince(started) >= 0.05);
    CHECK(waited.error().message() == "allReduce #2 (5 f32, sum) on rank 0 of 1 (single "
                                      "process) timed out after 0.05 s (synchronize)");
    REQUIRE(waited.error().notes().size() == 1);
    CHECK_THAT(waited.error().notes()[0], Catch::Contains("rank 1 did not arrive"));
    CHECK(fake.aborts == 1);
    CHECK(host.barriers == 1);
  }
  SECTION("the stream fails") {
    auto waited = waitForNccl(library, fakeComm(), rankOf, &host, 10s, site, [] {
      return Expected<bool>(makeError(ErrorCode::Unavailable, "an illegal memory access"));
    });
    REQUIRE_FALSE(waited);
    CHECK(waited.error().message() == "an illegal memory access");
    CHECK(fake.aborts == 1);
    CHECK(host.barriers == 0);
  }
  SECTION("a peer's failure reaches this rank as NCCL's asynchronous error") {
    fake.afterwards = ncclRemoteError;
    auto waited = waitForNccl(library, fakeComm(), rankOf, &host, 10s, site,
                              [] { return Expected<bool>(false); });
    REQUIRE_FALSE(waited);
    CHECK_THAT(waited.error().message(),
               Catch::StartsWith("synchronize failed in allReduce #2 (5 f32, sum) on rank 0 of 1 "
                                 "(single process): remote process exited"));
    CHECK(fake.aborts == 1);
  }
}

TEST_CASE("the NCCL here starts up without blocking", "[dist][nccl][wait]") {
  auto library = ncclLibrary();
  if (!library) {
    WARN("skipped: NCCL is not installed here: " << library.error().message());
    SUCCEED();
    return;
  }
  // ncclCommInitRankConfig and ncclCommFinalize came with NCCL 2.14.
  bool recent = (*library)->version >= 21400;
  CHECK(((*library)->api->ncclCommInitRankConfig != nullptr) == recent);
  CHECK(((*library)->api->ncclCommFinalize != nullptr) == recent);
}
