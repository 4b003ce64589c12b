// NCCL collectives on device buffers, and the start-up that gets every rank of a
// host communicator into one NCCL communicator or fails them all, saying why.
#include "runtime/dist/NcclCommunicator.h"

#include "runtime/cuda/CudaDevice.h"
#include "runtime/dist/NcclApi.h"

#include <fmt/format.h>

#include <vector>

namespace kiln::runtime::dist {
namespace {

std::optional<ncclDataType_t> ncclTypeOf(DType dtype) {
  switch (dtype) {
  case DType::F64: return ncclFloat64;
  case DType::F32: return ncclFloat32;
  case DType::F16: return ncclFloat16;
  case DType::BF16: return ncclBfloat16;
  case DType::I64: return ncclInt64;
  case DType::I32: return ncclInt32;
  case DType::I8: return ncclInt8;
  default: return std::nullopt;
  }
}

cudaStream_t cudaStreamOf(Stream stream) { return static_cast<cudaStream_t>(stream.handle); }

/// What one rank reports of its start-up; rank r's goes into slot r of an all-reduce.
enum StartupStatus : int32_t { kReady = 0, kNoNccl = 1, kNoDevice = 2 };

} // namespace

NcclCommunicator::NcclCommunicator(const NcclLibrary &library,
                                   std::shared_ptr<cuda::CudaDevice> device, Communicator &host,
                                   ncclComm *comm, bool nonblocking,
                                   std::chrono::milliseconds timeout)
    : library_(library), device_(std::move(device)), host_(host), comm_(comm),
      nonblocking_(nonblocking), timeout_(timeout) {}

NcclCommunicator::~NcclCommunicator() {
  if (aborted_ || !comm_ || !device_->makeCurrent())
    return;
  // A nonblocking communicator is finalized (its last operations flushed) before it
  // is destroyed; a wait that fails has aborted it, which frees it.
  if (nonblocking_ && library_.api->ncclCommFinalize) {
    ncclResult_t finalizing = library_.api->ncclCommFinalize(comm_);
    if (finalizing != ncclSuccess && finalizing != ncclInProgress) {
      library_.api->ncclCommAbort(comm_);
      return;
    }
    if (!waitForNccl(library_, comm_, *this, nullptr, timeout_, {"ncclCommFinalize", "shut-down"}))
      return;
  }
  library_.api->ncclCommDestroy(comm_);
}

int NcclCommunicator::rank() const { return host_.rank(); }
int NcclCommunicator::size() const { return host_.size(); }

Expected<void> NcclCommunicator::enqueued(int result, std::string_view call,
                                          std::string collective) {
  auto code = static_cast<ncclResult_t>(result);
  if (code == ncclInProgress && nonblocking_) {
    if (auto waited = waitForNccl(library_, comm_, *this, &host_, timeout_, {call, collective});
        !waited) {
      aborted_ = true;
      return waited;
    }
  } else {
    KILN_TRY_VOID(checkNccl(library_, code, call, collective, *this, comm_));
  }
  if (pendingCount_++ == 0)
    firstPending_ = std::move(collective);
  return {};
}

std::string NcclCommunicator::pendingCollectives() const {
  if (pendingCount_ == 0)
    return "the work on the stream";
  if (pendingCount_ == 1)
    return firstPending_;
  return fmt::format("{} and the {} collectives after it", firstPending_, pendingCount_ - 1);
}

Expected<void> NcclCommunicator::allReduce(void *data, int64_t count, DType dtype, ReduceOp op,
                                           Stream stream) {
  KILN_TRY_VOID(checkCollectiveArguments(*this, "allReduce", data, count, dtype, op));
  auto type = ncclTypeOf(dtype);
  if (!type)
    return makeError(ErrorCode::Unsupported,
                     fmt::format("allReduce on {}: {} buffers are not supported", describeRank(*this),
                                 dtypeName(dtype)));
  if (aborted_)
    return makeError(ErrorCode::Unavailable,
                     fmt::format("allReduce on {}: the communicator was aborted", describeRank(*this)));
  KILN_TRY_VOID(device_->makeCurrent());
  std::string collective = fmt::format("allReduce #{} ({} {}, {})", ++sequence_, count,
                                       dtypeName(dtype), reduceOpName(op));
  return enqueued(library_.api->ncclAllReduce(data, data, static_cast<size_t>(count), *type,
                                              op == ReduceOp::Mean ? ncclAvg : ncclSum, comm_,
                                              cudaStreamOf(stream)),
                  "ncclAllReduce", std::move(collective));
}

Expected<void> NcclCommunicator::broadcast(void *data, int64_t count, DType dtype, int root,
                                           Stream stream) {
  KILN_TRY_VOID(
      checkCollectiveArguments(*this, "broadcast", data, count, dtype, ReduceOp::Sum, root));
  if (aborted_)
    return makeError(ErrorCode::Unavailable,
                     fmt::format("broadcast on {}: the communicator was aborted", describeRank(*this)));
  // Bytes, whatever the element type: a broadcast only copies.
  KILN_TRY_VOID(device_->makeCurrent());
  std::string collective = fmt::format("broadcast #{} ({} {} from rank {})", ++sequence_, count,
                                       dtypeName(dtype), root);
  return enqueued(library_.api->ncclBroadcast(data, data,
                                              static_cast<size_t>(count * dtypeByteSize(dtype)),
                                              ncclInt8, root, comm_, cudaStreamOf(stream)),
                  "ncclBroadcast", std::move(collective));
}

Expected<void> NcclCommunicator::barrier() { return host_.barrier(); }

void NcclCommunicator::abort() {
  if (aborted_)
    return;
  aborted_ = true;
  if (comm_)
    library_.api->ncclCommAbort(comm_);
}

Expected<void> NcclCommunicator::synchronize(Stream stream) {
  if (aborted_)
    return makeError(ErrorCode::Unavailable,
                     fmt::format("synchronize on {}: the communicator was aborted",
                                 describeRank(*this)));
  KILN_TRY(Event event, device_->createEvent());
  Expected<void> recorded = device_->record(event, stream);
  Expected<void> waited = recorded ? waitForNccl(library_, comm_, *this, &host_, timeout_,
                                                 {"synchronize", pendingCollectives()},
                                                 [&] { return device_->eventDone(event); })
                                   : recorded;
  device_->destroyEvent(event);
  if (!waited) {
    // A failed wait has aborted NCCL's communicator; a failed record has not.
    aborted_ = aborted_ || recorded.has_value();
    return waited;
  }
  pendingCount_ = 0;
  firstPending_.clear();
  return {};
}

Expected<std::unique_ptr<NcclCommunicator>> openNcclCommunicator(Communicator &host,
                                                                 int deviceOrdinal,
                                                                 const CommunicatorOptions &options) {
  std::string where = fmt::format("opening NCCL on {}", describeRank(host));
  if (host.memorySpace() != MemorySpace::Host)
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("{}: NCCL is opened over a host communicator (MPI or a single "
                                 "process), not {}",
                                 where, host.backendName()));
  KILN_TRY(std::chrono::milliseconds timeout, resolveTimeout(options));

  // Every rank tries, then all learn who could not, so none waits for a failed peer.
  std::optional<Error> ownFailure;
  StartupStatus status = kReady;
  auto library = ncclLibrary();
  std::shared_ptr<cuda::CudaDevice> device;
  if (!library) {
    ownFailure = library.error();
    status = kNoNccl;
  } else if (auto opened = cuda::openCudaDevice(deviceOrdinal); !opened) {
    ownFailure = opened.error();
    status = kNoDevice;
  } else {
    device = *opened;
  }
  std::vector<int32_t> statuses(static_cast<size_t>(host.size()), 0);
  statuses[host.rank()] = status;
  KILN_TRY_VOID(host.allReduce(statuses.data(), host.size(), DType::I32, ReduceOp::Sum));
  if (ownFailure) {
    Error error(ownFailure->code(),
                fmt::format("{}: {}{}", where,
                            status == kNoDevice ? fmt::format("NCCL needs GPU {}: ", deviceOrdinal)
                                                : "",
                            ownFailure->message()));
    for (const std::string &note : ownFailure->notes())
      error.withNote(note);
    return std::unexpected(std::move(error));
  }
  std::vector<std::string> failed;
  for (int rank = 0; rank < host.size(); ++rank)
    if (statuses[rank] != kReady)
      failed.push_back(fmt::format("rank {} ({})", rank,
                                   statuses[rank] == kNoNccl ? "no NCCL" : "no usable GPU"));
  if (!failed.empty())
    return makeError(ErrorCode::Unavailable,
                     fmt::format("{}: {} could not start NCCL", where, fmt::join(failed, ", ")));

  const NcclLibrary &nccl = **library;
  KILN_TRY_VOID(device->makeCurrent());
  // Rank 0's id, with whether it could make one: a failure there must not leave the
  // others initializing against garbage.
  struct IdMessage {
    int32_t ok = 0;
    ncclUniqueId id{};
  } message;
  std::optional<Error> idFailure;
  if (host.rank() == 0) {
    if (auto made = checkNccl(nccl, nccl.api->ncclGetUniqueId(&message.id), "ncclGetUniqueId",
                              "start-up", host);
        made)
      message.ok = 1;
    else
      idFailure = made.error();
  }
  KILN_TRY_VOID(host.broadcast(&message, sizeof message, DType::I8, 0));
  if (idFailure)
    return std::unexpected(std::move(*idFailure));
  if (!message.ok)
    return makeError(ErrorCode::Unavailable,
                     fmt::format("{}: rank 0 could not create NCCL's unique id", where));

  KILN_TRY(JoinedNccl joined, joinNcclCommunicator(nccl, host, message.id, timeout));
  return std::make_unique<NcclCommunicator>(nccl, std::move(device), host, joined.comm,
                                            joined.nonblocking, timeout);
}

} // namespace kiln::runtime::dist
