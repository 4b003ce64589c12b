// The MPI communicator for host buffers, the whole of the libkiln_mpi plugin (the
// only kiln code that includes mpi.h or links libmpi). Collectives are
// non-blocking MPI operations polled against a deadline, and each rank tells
// every peer which collective it is starting, so that a timeout names the ranks
// that never arrived and mismatched calls are caught instead of corrupting data.
#include "runtime/dist/MpiPlugin.h"

#include "support/FloatConvert.h"
#include "support/Version.h"

#include <fmt/format.h>
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

namespace kiln::runtime::dist {
namespace {

enum class Collective : int32_t { AllReduce = 1, Broadcast = 2, Barrier = 3 };

/// What a rank says it is calling, sent to every peer as the collective starts.
struct Notice {
  uint64_t sequence = 0;
  int32_t collective = 0;
  int32_t dtype = -1; ///< a DType, or -1 for a barrier
  int64_t count = 0;
  int32_t root = 0;
  int32_t op = 0; ///< a ReduceOp
  bool operator==(const Notice &) const = default;
};

/// "allReduce #3 (1001 f32, sum)".
std::string describeNotice(const Notice &notice) {
  auto dtype = static_cast<DType>(notice.dtype);
  switch (static_cast<Collective>(notice.collective)) {
  case Collective::AllReduce:
    return fmt::format("allReduce #{} ({} {}, {})", notice.sequence, notice.count,
                       dtypeName(dtype), reduceOpName(static_cast<ReduceOp>(notice.op)));
  case Collective::Broadcast:
    return fmt::format("broadcast #{} ({} {} from rank {})", notice.sequence, notice.count,
                       dtypeName(dtype), notice.root);
  case Collective::Barrier:
    return fmt::format("barrier #{}", notice.sequence);
  }
  return fmt::format("an unknown collective (code {}) #{}", notice.collective, notice.sequence);
}

std::string mpiErrorString(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return fmt::format("MPI error {}", code);
  return std::string(text, static_cast<size_t>(length));
}

/// "1, 2 and 4".
std::string joinRanks(const std::vector<int> &ranks) {
  if (ranks.size() == 1)
    return std::to_string(ranks.front());
  std::vector<int> head(ranks.begin(), ranks.end() - 1);
  return fmt::format("{} and {}", fmt::join(head, ", "), ranks.back());
}

std::string formatSeconds(std::chrono::milliseconds duration) {
  return fmt::format("{:g} s", duration.count() / 1000.0);
}

constexpr int kNoticeTag = 7;

/// How many communicators are alive, and whether kiln initialized MPI: the last one
/// to go finalizes it, unless a failure left a peer behind.
int liveCommunicators = 0;
bool kilnInitializedMpi = false;

class MpiCommunicator final : public Communicator {
public:
  MpiCommunicator(MPI_Comm data, MPI_Comm notices, int rank, int size,
                  std::chrono::milliseconds timeout)
      : data_(data), notices_(notices), rank_(rank), size_(size), timeout_(timeout),
        received_(static_cast<size_t>(size)) {
    ++liveCommunicators;
  }
  ~MpiCommunicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  MemorySpace memorySpace() const override { return MemorySpace::Host; }
  std::string_view backendName() const override { return "MPI"; }

  Expected<void> allReduce(void *data, int64_t count, DType dtype, ReduceOp op,
                           Stream stream = {}) override;
  Expected<void> broadcast(void *data, int64_t count, DType dtype, int root,
                           Stream stream = {}) override;
  Expected<void> barrier() override;
  void abort() override;
  bool aborted() const override { return aborted_; }

private:
  /// The one place an MPI return code becomes an Error: it names the MPI call, the
  /// collective and this rank, with MPI's own text.
  Expected<void> check(int code, std::string_view mpiCall, const Notice &notice) const;
  /// Runs one collective: sends `notice` to every peer, starts the operation with
  /// `start`, and polls everything until it completes, fails or the deadline passes.
  template <typename Start> Expected<void> run(Notice notice, Start start);
  Expected<void> failRun(Error error);
  template <typename T>
  Expected<void> reduceAs(T *data, int64_t count, MPI_Datatype type, ReduceOp op,
                          const Notice &notice);
  Expected<void> checkCount(std::string_view collective, int64_t count, int bytesPerElement);

  MPI_Comm data_;
  MPI_Comm notices_;
  int rank_, size_;
  std::chrono::milliseconds timeout_;
  uint64_t sequence_ = 0;
  bool aborted_ = false;
  // MPI reads and writes these after the call that posts them returns, so they live
  // as long as the communicator (an abandoned operation may still touch them).
  Notice sent_;
  std::vector<Notice> received_;
  std::vector<MPI_Request> pending_;
};

Expected<void> MpiCommunicator::check(int code, std::string_view mpiCall,
                                      const Notice &notice) const {
  if (code == MPI_SUCCESS)
    return {};
  return makeError(ErrorCode::Unavailable,
                   fmt::format("{} failed in {} on {}: {}", mpiCall, describeNotice(notice),
                               describeRank(*this), mpiErrorString(code)));
}

Expected<void> MpiCommunicator::failRun(Error error) {
  abort();
  return std::unexpected(std::move(error));
}

template <typename Start> Expected<void> MpiCommunicator::run(Notice notice, Start start) {
  notice.sequence = ++sequence_;
  sent_ = notice;
  // pending_: one receive per peer (index = peer, our own slot stays null), one send
  // per peer, then the collective itself.
  pending_.assign(static_cast<size_t>(2 * size_ + 1), MPI_REQUEST_NULL);
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_)
      continue;
    if (auto posted = check(MPI_Irecv(&received_[peer], sizeof(Notice), MPI_BYTE, peer,
                                      kNoticeTag, notices_, &pending_[peer]),
                            "MPI_Irecv", notice);
        !posted)
      return failRun(std::move(posted).error());
    if (auto posted = check(MPI_Isend(&sent_, sizeof(Notice), MPI_BYTE, peer, kNoticeTag,
                                      notices_, &pending_[size_ + peer]),
                            "MPI_Isend", notice);
        !posted)
      return failRun(std::move(posted).error());
  }
  MPI_Request &operation = pending_.back();
  if (auto started = check(start(&operation), "starting the collective", notice); !started)
    return failRun(std::move(started).error());

  auto begin = std::chrono::steady_clock::now();
  auto deadline = begin + timeout_;
  std::vector<bool> done(pending_.size(), false);
  size_t remaining = pending_.size();
  for (int polls = 0;; ++polls) {
    for (size_t i = 0; i < pending_.size(); ++i) {
      if (done[i])
        continue;
      int finished = 0;
      if (auto tested = check(MPI_Test(&pending_[i], &finished, MPI_STATUS_IGNORE), "MPI_Test",
                              notice);
          !tested)
        return failRun(std::move(tested).error());
      if (!finished)
        continue;
      done[i] = true;
      --remaining;
      int peer = static_cast<int>(i);
      if (peer < size_ && peer != rank_ && !(received_[peer] == notice))
        return failRun(Error(ErrorCode::InvalidArgument,
                             fmt::format("{} on {}: rank {} called {} instead: every rank must "
                                         "call the same collectives in the same order",
                                         describeNotice(notice), describeRank(*this), peer,
                                         describeNotice(received_[peer]))));
    }
    if (remaining == 0)
      return {};
    if (std::chrono::steady_clock::now() > deadline)
      break;
    // Spin briefly (a collective among ready peers takes microseconds), then let the
    // other ranks have the cores: mpirun --oversubscribe puts several on one.
    if (polls > 100)
      std::this_thread::sleep_for(std::chrono::microseconds(polls > 1000 ? 500 : 50));
    else
      std::this_thread::yield();
  }

  std::vector<int> missing;
  for (int peer = 0; peer < size_; ++peer)
    if (peer != rank_ && !done[peer])
      missing.push_back(peer);
  std::string what =
      missing.empty()
          ? std::string("every rank arrived but the collective did not complete")
          : fmt::format("rank{} {} did not arrive", missing.size() > 1 ? "s" : "",
                        joinRanks(missing));
  Error error(ErrorCode::Unavailable,
              fmt::format("{} on {} timed out after {}: {}", describeNotice(notice),
                          describeRank(*this), formatSeconds(timeout_), what));
  error.withNote("a rank that exited, hangs, or is stuck before this collective never arrives; "
                 "KILN_DIST_TIMEOUT (seconds) sets how long collectives wait");
  return failRun(std::move(error));
}

Expected<void> MpiCommunicator::checkCount(std::string_view collective, int64_t count,
                                           int bytesPerElement) {
  if (count * bytesPerElement > INT_MAX)
    return makeError(ErrorCode::Unsupported,
                     fmt::format("{} on {}: {} elements of {} bytes exceed MPI's count of {} "
                                 "(split the buffer)",
                                 collective, describeRank(*this), count, bytesPerElement,
                                 INT_MAX));
  return {};
}

template <typename T>
Expected<void> MpiCommunicator::reduceAs(T *data, int64_t count, MPI_Datatype type, ReduceOp op,
                                         const Notice &notice) {
  KILN_TRY_VOID(run(notice, [&](MPI_Request *request) {
    return MPI_Iallreduce(MPI_IN_PLACE, data, static_cast<int>(count), type, MPI_SUM, data_,
                          request);
  }));
  if (op == ReduceOp::Mean)
    for (int64_t i = 0; i < count; ++i)
      data[i] /= static_cast<T>(size_);
  return {};
}

Expected<void> MpiCommunicator::allReduce(void *data, int64_t count, DType dtype, ReduceOp op,
                                          Stream) {
  KILN_TRY_VOID(checkCollectiveArguments(*this, "allReduce", data, count, dtype, op));
  KILN_TRY_VOID(checkCount("allReduce", count, std::max(4, dtypeByteSize(dtype))));
  Notice notice{0, static_cast<int32_t>(Collective::AllReduce), static_cast<int32_t>(dtype), count,
                0, static_cast<int32_t>(op)};
  switch (dtype) {
  case DType::F64:
    return reduceAs(static_cast<double *>(data), count, MPI_DOUBLE, op, notice);
  case DType::F32:
    return reduceAs(static_cast<float *>(data), count, MPI_FLOAT, op, notice);
  case DType::I64:
    return reduceAs(static_cast<int64_t *>(data), count, MPI_INT64_T, op, notice);
  case DType::I32:
    return reduceAs(static_cast<int32_t *>(data), count, MPI_INT32_T, op, notice);
  case DType::F16:
  case DType::BF16: {
    // MPI has no 16-bit floats: they are summed in f32 and rounded once at the end.
    auto *bits = static_cast<uint16_t *>(data);
    bool half = dtype == DType::F16;
    std::vector<float> wide(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i)
      wide[i] = half ? halfBitsToFloat(bits[i]) : bfloat16BitsToFloat(bits[i]);
    KILN_TRY_VOID(reduceAs(wide.data(), count, MPI_FLOAT, op, notice));
    for (int64_t i = 0; i < count; ++i)
      bits[i] = half ? floatToHalfBits(wide[i]) : floatToBFloat16Bits(wide[i]);
    return {};
  }
  default:
    return makeError(ErrorCode::Unsupported,
                     fmt::format("allReduce on {}: {} buffers are not supported (f64, f32, f16, "
                                 "bf16, i64 and i32 are)",
                                 describeRank(*this), dtypeName(dtype)));
  }
}

Expected<void> MpiCommunicator::broadcast(void *data, int64_t count, DType dtype, int root,
                                          Stream) {
  KILN_TRY_VOID(
      checkCollectiveArguments(*this, "broadcast", data, count, dtype, ReduceOp::Sum, root));
  KILN_TRY_VOID(checkCount("broadcast", count, dtypeByteSize(dtype)));
  Notice notice{0, static_cast<int32_t>(Collective::Broadcast), static_cast<int32_t>(dtype),
                count, root, 0};
  int bytes = static_cast<int>(count * dtypeByteSize(dtype));
  return run(notice, [&](MPI_Request *request) {
    return MPI_Ibcast(data, bytes, MPI_BYTE, root, data_, request);
  });
}

Expected<void> MpiCommunicator::barrier() {
  if (aborted_)
    return makeError(ErrorCode::Unavailable,
                     fmt::format("barrier on {}: the communicator was aborted by an earlier "
                                 "failure",
                                 describeRank(*this)));
  Notice notice{0, static_cast<int32_t>(Collective::Barrier), -1, 0, 0, 0};
  return run(notice, [&](MPI_Request *request) { return MPI_Ibarrier(data_, request); });
}

void MpiCommunicator::abort() {
  if (aborted_)
    return;
  aborted_ = true;
  // Notices still on their way are cancelled and released; the collective itself
  // can be neither (MPI forbids it), so it is abandoned: nothing calls MPI on this
  // communicator again, so nothing progresses it.
  for (size_t i = 0; i + 1 < pending_.size(); ++i) {
    if (pending_[i] == MPI_REQUEST_NULL)
      continue;
    if (static_cast<int>(i) < size_)
      MPI_Cancel(&pending_[i]);
    MPI_Request_free(&pending_[i]);
  }
}

MpiCommunicator::~MpiCommunicator() {
  --liveCommunicators;
  if (aborted_)
    // MPI_Finalize waits for every rank: after a failure it could wait forever.
    return;
  // The same wait, bounded: a rank that stopped calling in after the last collective
  // must not hang the others' exit.
  if (auto met = barrier(); !met) {
    std::fprintf(stderr, "kiln: leaving MPI without finalizing: %s\n",
                 met.error().str().c_str());
    return;
  }
  MPI_Comm_free(&notices_);
  MPI_Comm_free(&data_);
  if (liveCommunicators == 0 && kilnInitializedMpi) {
    MPI_Finalize();
    kilnInitializedMpi = false;
  }
}

/// MPI_Init_thread waits, unbounded, for every process the launcher started
/// (Open MPI's start-up exchange), so one that never joins hangs it; it cannot
/// be interrupted and returns no error then. A watchdog ends the process when
/// it has not returned within the collective timeout, saying so, which makes
/// the launcher end the others. Start-up may take longer than a collective on a
/// loaded machine (the tests' timeout is 2 s), hence a floor.
constexpr std::chrono::milliseconds kMinimumInitTimeout{10'000};

class InitWatchdog {
public:
  explicit InitWatchdog(std::chrono::milliseconds timeout)
      : thread_([this, timeout] { watch(timeout); }) {}
  ~InitWatchdog() {
    {
      std::lock_guard lock(mutex_);
      returned_ = true;
    }
    returnedChanged_.notify_all();
    thread_.join();
  }
  InitWatchdog(const InitWatchdog &) = delete;
  InitWatchdog &operator=(const InitWatchdog &) = delete;

private:
  void watch(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mutex_);
    if (returnedChanged_.wait_for(lock, timeout, [&] { return returned_; }))
      return;
    std::fprintf(stderr,
                 "kiln: error: MPI_Init_thread did not return within %s (the collective "
                 "timeout, $KILN_DIST_TIMEOUT, and at least 10 s): a process the launcher "
                 "started has not joined MPI; ending this process\n",
                 formatSeconds(timeout).c_str());
    std::fflush(stderr);
    std::_Exit(1);
  }

  std::mutex mutex_;
  std::condition_variable returnedChanged_;
  bool returned_ = false;
  std::thread thread_; ///< last: started once the rest exists
};

Expected<std::unique_ptr<Communicator>> openWorld(std::chrono::milliseconds timeout) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (finalized)
    return makeError(ErrorCode::Unavailable,
                     "MPI was already finalized in this process (MPI cannot start twice): "
                     "keep one MPI communicator for the whole run");
  if (!initialized) {
    int provided = 0;
    std::optional<InitWatchdog> watchdog(std::in_place, std::max(timeout, kMinimumInitTimeout));
    int code = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    watchdog.reset();
    if (code != MPI_SUCCESS)
      return makeError(ErrorCode::Unavailable,
                       fmt::format("MPI_Init_thread failed: {}", mpiErrorString(code)));
    kilnInitializedMpi = true;
    if (provided < MPI_THREAD_SERIALIZED)
      return makeError(ErrorCode::Unavailable,
                       fmt::format("this MPI gives thread level {}; kiln needs "
                                   "MPI_THREAD_SERIALIZED ({}) to run collectives on a "
                                   "communication thread",
                                   provided, MPI_THREAD_SERIALIZED));
  }
  // Errors come back as return codes, which check() turns into Errors, instead of
  // MPI's default of aborting the job.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm data = MPI_COMM_NULL, notices = MPI_COMM_NULL;
  for (MPI_Comm *comm : {&data, &notices}) {
    if (int code = MPI_Comm_dup(MPI_COMM_WORLD, comm); code != MPI_SUCCESS)
      return makeError(ErrorCode::Unavailable,
                       fmt::format("MPI_Comm_dup failed on rank {} of {}: {}", rank, size,
                                   mpiErrorString(code)));
    MPI_Comm_set_errhandler(*comm, MPI_ERRORS_RETURN);
  }
  return std::make_unique<MpiCommunicator>(data, notices, rank, size, timeout);
}

const MpiPluginEntry kEntry{KILN_VERSION_STRING, &openWorld};

} // namespace
} // namespace kiln::runtime::dist

extern "C" __attribute__((visibility("default"))) const kiln::runtime::dist::MpiPluginEntry *
kilnMpiPluginEntry() {
  return &kiln::runtime::dist::kEntry;
}
