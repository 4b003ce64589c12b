// NCCL on GPUs (docs/distributed.md): a 1-rank NCCL communicator's collectives and a
// Trainer handed it, against the CPU; and, where nvidia-smi lists two or more GPUs and
// mpirun is installed, 2 ranks on 2 GPUs (this executable again under mpirun, one
// process per GPU: NCCL refuses two ranks on one GPU) against one GPU's trainer.
// Without NCCL, a second GPU or mpirun, the case says why it skipped.
#include "GpuTestDevice.h"

#include "compiler/TrainingTestUtil.h"
#include "compiler/training/Trainer.h"
#include "runtime/dist/HostCommunicator.h"
#include "runtime/dist/NcclCommunicator.h"
#include "runtime/dist/NcclLibrary.h"
#include "runtime/dist/SingleProcessCommunicator.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sys/wait.h>

namespace kiln::test {
namespace {

using runtime::dist::Communicator;
using runtime::dist::NcclCommunicator;
using training::OptimizerOptions;
using training::Trainer;
using training::TrainingOptions;

/// GPU training against GPU or CPU training in another summation order
/// (GpuTrainingTest's tolerance).
constexpr double kTolerance = 1e-4;

/// NCCL over `host`, owning it: the shape TrainingOptions::communicator takes.
std::shared_ptr<Communicator> ncclOver(std::shared_ptr<Communicator> host) {
  auto opened = runtime::dist::openNcclCommunicator(*host, 0);
  if (!opened)
    FAIL(opened.error().str());
  return std::shared_ptr<Communicator>(opened->release(),
                                       [host](Communicator *communicator) { delete communicator; });
}

/// A shell command's output and exit status.
std::pair<std::string, int> runCommand(const std::string &command) {
  std::string output;
  FILE *pipe = ::popen(command.c_str(), "r");
  if (!pipe)
    return {"popen failed", -1};
  std::array<char, 4096> chunk;
  while (size_t read = std::fread(chunk.data(), 1, chunk.size(), pipe))
    output.append(chunk.data(), read);
  int status = ::pclose(pipe);
  return {output, WIFEXITED(status) ? WEXITSTATUS(status) : -1};
}

int visibleGpus() {
  auto [listing, status] = runCommand("nvidia-smi -L 2>/dev/null");
  int gpus = 0;
  for (size_t at = 0; status == 0 && (at = listing.find("GPU ", at)) != std::string::npos; ++at)
    gpus += at == 0 || listing[at - 1] == '\n';
  return gpus;
}

TrainingOptions sgdOptions(TargetKind target) {
  TrainingOptions options;
  options.optimizer = OptimizerOptions::sgd(0.3, 0.9);
  options.clipGlobalNorm = 0.5;
  options.compile.target = target;
  return options;
}

} // namespace

TEST_CASE("a 1-rank NCCL communicator reduces on the GPU, and a trainer given it matches the CPU",
          "[gpu][nccl]") {
  auto library = runtime::dist::ncclLibrary();
  if (!library) {
    WARN("skipped: " << library.error().str());
    SUCCEED();
    return;
  }
  INFO("NCCL " << (*library)->versionText() << " from " << (*library)->libraryPath);
  std::shared_ptr<Communicator> nccl =
      ncclOver(std::make_shared<runtime::dist::SingleProcessCommunicator>());
  CHECK(nccl->memorySpace() == runtime::dist::MemorySpace::Device);
  CHECK(nccl->size() == 1);
  auto &ncclCommunicator = static_cast<NcclCommunicator &>(*nccl);
  // NCCL runs on test_gpu's own GPU: kiln opens one device object per ordinal.
  CHECK(&ncclCommunicator.device() == &gpuTestDevice());

  // The collectives themselves, on a stream of their own, with the bounded wait.
  runtime::cuda::CudaDevice &gpu = gpuTestDevice();
  std::vector<float> values(1001);
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = static_cast<float>(i % 97) * 0.25f - 3.0f;
  auto stream = gpu.createStream();
  REQUIRE(stream);
  auto buffer = gpu.allocate(static_cast<int64_t>(values.size() * sizeof(float)));
  REQUIRE(buffer);
  int64_t bytes = static_cast<int64_t>(values.size() * sizeof(float));
  REQUIRE(gpu.copyToDevice(*buffer, values.data(), bytes, *stream));
  auto *data = reinterpret_cast<void *>(*buffer);
  for (auto op : {runtime::dist::ReduceOp::Sum, runtime::dist::ReduceOp::Mean}) {
    auto reduced = nccl->allReduce(data, 1001, DType::F32, op, *stream);
    if (!reduced)
      FAIL(reduced.error().str());
  }
  auto sent = nccl->broadcast(data, 1001, DType::F32, 0, *stream);
  if (!sent)
    FAIL(sent.error().str());
  auto waited = nccl->synchronize(*stream);
  if (!waited)
    FAIL(waited.error().str());
  std::vector<float> back(values.size(), -1.0f);
  REQUIRE(gpu.copyToHost(back.data(), *buffer, bytes, *stream));
  REQUIRE(gpu.synchronize(*stream));
  CHECK(back == values); // one rank: the sum, the mean and the broadcast leave it as it is
  gpu.free(*buffer);
  gpu.destroyStream(*stream);

  // A trainer given it trains as the CPU does (one rank: no all_reduce in its program).
  MlpShape shape{.batch = 24, .features = 9, .hidden = 33, .classes = 5};
  auto model = buildMlp(shape);
  auto cpu = Trainer::create(*model, sgdOptions(TargetKind::Cpu));
  REQUIRE(cpu);
  TrainingOptions onGpu = sgdOptions(TargetKind::Cuda);
  onGpu.communicator = nccl;
  auto trained = Trainer::create(*model, onGpu);
  if (!trained)
    FAIL(trained.error().str());
  for (uint64_t step = 0; step < 4; ++step) {
    CAPTURE(step);
    NamedTensors batch = separableBatch(shape, 400 + step);
    auto gpuStep = trained->step(batch);
    auto cpuStep = cpu->step(batch);
    if (!gpuStep)
      FAIL(gpuStep.error().str());
    REQUIRE(cpuStep);
    CHECK(gpuStep->loss == Approx(cpuStep->loss).epsilon(kTolerance));
    checkParamsClose(*cpu, *trained, kTolerance);
  }
}

TEST_CASE("2 ranks on 2 GPUs reduce with NCCL and train as one GPU does", "[gpu][nccl][mpi]") {
  int gpus = visibleGpus();
  if (gpus < 2) {
    WARN("skipped: nvidia-smi -L lists " << gpus << " GPU(s); 2 ranks need one GPU each");
    SUCCEED();
    return;
  }
  if (runCommand("command -v mpirun >/dev/null").second != 0) {
    WARN("skipped: " << gpus << " GPUs, but mpirun is not installed (Debian: openmpi-bin)");
    SUCCEED();
    return;
  }
  // Each rank is this executable again, shown only its local rank's GPU (as kiln train
  // does), running the hidden case below.
  std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  std::string command = fmt::format(
      "mpirun --allow-run-as-root --oversubscribe -np 2 sh -c "
      "'CUDA_VISIBLE_DEVICES=$OMPI_COMM_WORLD_LOCAL_RANK exec \"$0\" \"$@\"' '{}' "
      "'[.nccl-rank]' 2>&1",
      self);
  auto [output, status] = runCommand(command);
  INFO(command << "\n" << output);
  CHECK(status == 0);
  size_t passed = 0;
  for (size_t at = 0; (at = output.find("All tests passed", at)) != std::string::npos; ++at)
    ++passed;
  CHECK(passed == 2);
}

TEST_CASE("one of 2 ranks on 2 GPUs (started by the case above under mpirun)", "[.nccl-rank]") {
  auto host = runtime::dist::openHostCommunicator();
  if (!host)
    FAIL(host.error().str());
  std::shared_ptr<Communicator> hostCommunicator = std::move(*host);
  REQUIRE(hostCommunicator->size() == 2);
  int rank = hostCommunicator->rank();
  std::shared_ptr<Communicator> nccl = ncclOver(hostCommunicator);

  // A global batch of 9: shards of 5 and 4 rows, weighted by their rows.
  MlpShape global{.batch = 9, .features = 9, .hidden = 33, .classes = 5};
  MlpShape shard = global;
  int64_t begin = rank == 0 ? 0 : 5, end = rank == 0 ? 5 : 9;
  shard.batch = end - begin;
  auto wholeModel = buildMlp(global);
  auto shardModel = buildMlp(shard);
  auto single = Trainer::create(*wholeModel, sgdOptions(TargetKind::Cuda));
  REQUIRE(single);
  TrainingOptions options = sgdOptions(TargetKind::Cuda);
  options.communicator = nccl;
  auto ranked = Trainer::create(*shardModel, options);
  if (!ranked)
    FAIL(ranked.error().str());
  for (uint64_t step = 0; step < 4; ++step) {
    CAPTURE(rank, step);
    NamedTensors batch = separableBatch(global, 500 + step);
    auto mine = ranked->step(sliceBatch(batch, begin, end));
    auto whole = single->step(batch);
    if (!mine)
      FAIL(mine.error().str());
    REQUIRE(whole);
    // The loss is the global batch's on every rank.
    CHECK(mine->loss == Approx(whole->loss).epsilon(kTolerance));
    REQUIRE(mine->gradNorm);
    CHECK(*mine->gradNorm == Approx(*whole->gradNorm).epsilon(kTolerance));
  }
  checkParamsClose(*single, *ranked, kTolerance);
}

} // namespace kiln::test
