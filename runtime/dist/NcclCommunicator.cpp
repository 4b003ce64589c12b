// NCCL collectives on device buffers, and the start-up that gets every rank of a
// host communicator into one NCCL communicator or fails them all, saying why.
#include "runtime/dist/NcclCommunicator.h"

#include "runtime/cuda/CudaDevice.h"
#include "runtime/dist/NcclApi.h"

#include <fmt/format.h>

#include <cstring>
#include <thread>
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
                                   ncclComm *comm, std::chrono::milliseconds timeout)
    : library_(library), device_(std::move(device)), host_(host), comm_(comm),
      timeout_(timeout) {}

NcclCommunicator::~NcclCommunicator() {
  if (!aborted_ && comm_ && device_->makeCurrent())
    library_.api->ncclCommDestroy(comm_);
}

int NcclCommunicator::rank() const { return host_.rank(); }
int NcclCommunicator::size() const { return host_.size(); }

Expected<void> NcclCommunicator::allReduce(void *data, int64_t count, DType dtype, ReduceOp op,
                                           Stream stream) {
  KILN_TRY_VOID(checkCollectiveArguments(*this, "allReduce", data, count, dtype, op));
  auto type = ncclTypeOf(dtype);
  if (!type)
    return makeError(ErrorCode::Unsupported,
                     fmt::format("allReduce on {}: {} buffers are not supported", describeRank(*this),
                                 dtypeName(dtype)));
  KILN_TRY_VOID(device_->makeCurrent());
  std::string collective = fmt::format("allReduce ({} {}, {})", count, dtypeName(dtype),
                                       reduceOpName(op));
  return checkNccl(library_,
                   library_.api->ncclAllReduce(data, data, static_cast<size_t>(count), *type,
                                               op == ReduceOp::Mean ? ncclAvg : ncclSum, comm_,
                                               cudaStreamOf(stream)),
                   "ncclAllReduce", collective, *this, comm_);
}

Expected<void> NcclCommunicator::broadcast(void *data, int64_t count, DType dtype, int root,
                                           Stream stream) {
  KILN_TRY_VOID(
      checkCollectiveArguments(*this, "broadcast", data, count, dtype, ReduceOp::Sum, root));
  // Bytes, whatever the element type: a broadcast only copies.
  KILN_TRY_VOID(device_->makeCurrent());
  std::string collective =
      fmt::format("broadcast ({} {} from rank {})", count, dtypeName(dtype), root);
  return checkNccl(library_,
                   library_.api->ncclBroadcast(data, data,
                                               static_cast<size_t>(count * dtypeByteSize(dtype)),
                                               ncclInt8, root, comm_, cudaStreamOf(stream)),
                   "ncclBroadcast", collective, *this, comm_);
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
  KILN_TRY(Event event, device_->createEvent());
  auto destroy = [&] { device_->destroyEvent(event); };
  if (auto recorded = device_->record(event, stream); !recorded) {
    destroy();
    return recorded;
  }
  auto deadline = std::chrono::steady_clock::now() + timeout_;
  for (;;) {
    auto done = device_->eventDone(event);
    if (!done || *done) {
      destroy();
      if (!done)
        return std::unexpected(done.error());
      return {};
    }
    ncclResult_t asyncError = ncclSuccess;
    library_.api->ncclCommGetAsyncError(comm_, &asyncError);
    if (asyncError != ncclSuccess && asyncError != ncclInProgress) {
      destroy();
      auto failed = checkNccl(library_, asyncError, "a collective", "synchronize", *this, comm_);
      abort();
      return failed;
    }
    if (std::chrono::steady_clock::now() > deadline)
      break;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  destroy();
  Error error(ErrorCode::Unavailable,
              fmt::format("synchronize on {}: the collectives enqueued on the stream did not "
                          "finish within {:g} s",
                          describeRank(*this), timeout_.count() / 1000.0));
  // The ranks whose hosts still answer reach the barrier; the missing ones are named.
  abort();
  if (auto met = host_.barrier(); !met)
    error.withNote(met.error().message());
  else
    error.withNote("every rank's host reached a barrier: a device, not a process, is stuck");
  return std::unexpected(std::move(error));
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

  ncclComm_t comm = nullptr;
  KILN_TRY_VOID(checkNccl(nccl,
                          nccl.api->ncclCommInitRank(&comm, host.size(), message.id, host.rank()),
                          "ncclCommInitRank", "start-up", host));
  return std::make_unique<NcclCommunicator>(nccl, std::move(device), host, comm, timeout);
}

} // namespace kiln::runtime::dist
