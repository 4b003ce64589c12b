// all_reduce in compiled models: no kernel but a plan step that calls
// RunOptions::communicator, on the host (CompiledModel) and on a device (the
// device executor on the simulator). The communicator here pretends every
// rank holds the same tensor, so each result is known; tests/dist runs real ranks.
#include "CompileTestUtil.h"

#include "runtime/dist/Communicator.h"

#include <cstring>

namespace kiln::test {
namespace {

using runtime::dist::MemorySpace;
using runtime::dist::ReduceOp;

/// Rank 0 of `size` ranks that all hold this rank's data: a sum multiplies
/// by `size`, a mean leaves it. Device buffers are simulator memory, which is
/// host memory, so it can scale them in place too. Records each call.
class MirroredCommunicator final : public runtime::dist::Communicator {
public:
  struct Call {
    int64_t count;
    DType dtype;
    ReduceOp op;
  };
  MirroredCommunicator(int size, MemorySpace space) : size_(size), space_(space) {}
  int rank() const override { return 0; }
  int size() const override { return size_; }
  MemorySpace memorySpace() const override { return space_; }
  std::string_view backendName() const override { return "mirrored test ranks"; }
  Expected<void> allReduce(void *data, int64_t count, DType dtype, ReduceOp op,
                           runtime::Stream) override {
    calls.push_back({count, dtype, op});
    KILN_CHECK(dtype == DType::F32, "the test reduces f32 only");
    if (op == ReduceOp::Sum)
      for (float &value : std::span(static_cast<float *>(data), static_cast<size_t>(count)))
        value *= static_cast<float>(size_);
    return {};
  }
  Expected<void> broadcast(void *, int64_t, DType, int, runtime::Stream) override { return {}; }
  Expected<void> barrier() override { return {}; }
  void abort() override {}
  bool aborted() const override { return false; }
  /// Counts the waits; fails them, as a peer that never came would, when told to.
  Expected<void> synchronize(runtime::Stream) override {
    ++synchronized;
    if (failSynchronize)
      return makeError(ErrorCode::Unavailable, "allReduce #1 (20 f32, sum) on rank 0 of 2 "
                                               "(mirrored test ranks) timed out after 2 s");
    return {};
  }

  std::vector<Call> calls;
  int synchronized = 0;
  bool failSynchronize = false;

private:
  int size_;
  MemorySpace space_;
};

/// y = all_reduce(2x, op) + 1 and z = 3x: one collective between two kernels.
struct ReduceModel {
  CompileCase c{"all-reduce"};
  explicit ReduceModel(const std::string &op) {
    Tensor x = c.input("x", {4, 5});
    Tensor reduced = c.graph().apply(ir::OpKind::AllReduce, {x * 2.0}, {{"op", op}},
                                     std::source_location::current());
    c.output("y", reduced + 1.0);
    c.output("z", x * 3.0);
    REQUIRE(c.graph().finalize());
  }
};

/// Checks y == scale * 2x + 1 and z == 3x element by element.
void checkResults(const NamedTensors &results, const HostTensor &x, float scale) {
  const HostTensor &y = results.at("y");
  const HostTensor &z = results.at("z");
  for (int64_t i = 0; i < x.numElements(); ++i) {
    INFO("element " << i);
    CHECK(y.getDouble(i) == static_cast<double>(scale * 2.0f * static_cast<float>(x.getDouble(i)) + 1.0f));
    CHECK(z.getDouble(i) == static_cast<double>(3.0f * static_cast<float>(x.getDouble(i))));
  }
}

CompiledModel compileFor(ReduceModel &model, TargetKind target) {
  CompileOptions options;
  options.target = target;
  if (target == TargetKind::Sim)
    options.gpuArch = "sm_80";
  return compileOrFail(model.c.graph().ir(), options);
}

TEST_CASE("all_reduce runs as a communicator call between kernels", "[compiler][dist]") {
  for (TargetKind target : {TargetKind::Cpu, TargetKind::Sim}) {
    bool onDevice = target == TargetKind::Sim;
    INFO((onDevice ? "simulator (device executor)" : "cpu"));
    MemorySpace space = onDevice ? MemorySpace::Device : MemorySpace::Host;
    ReduceModel sum("sum");
    CompiledModel compiled = compileFor(sum, target);
    NamedTensors tensors = sum.c.tensors();
    const HostTensor &x = tensors.at("x");

    // No communicator, or one rank: the identity.
    auto alone = compiled.run(tensors);
    REQUIRE(alone);
    checkResults(*alone, x, 1.0f);
    MirroredCommunicator one(1, space);
    RunOptions withOne;
    withOne.communicator = &one;
    auto single = compiled.run(tensors, withOne);
    REQUIRE(single);
    checkResults(*single, x, 1.0f);
    CHECK(one.calls.empty());

    // Three ranks: the step calls the communicator once, on the whole tensor.
    MirroredCommunicator three(3, space);
    RunOptions withThree;
    withThree.communicator = &three;
    auto reduced = compiled.run(tensors, withThree);
    REQUIRE(reduced);
    checkResults(*reduced, x, 3.0f);
    REQUIRE(three.calls.size() == 1);
    CHECK(three.calls[0].count == 20);
    CHECK(three.calls[0].op == ReduceOp::Sum);

    ReduceModel mean("mean");
    CompiledModel meanCompiled = compileFor(mean, target);
    MirroredCommunicator meanRanks(3, space);
    RunOptions withMean;
    withMean.communicator = &meanRanks;
    auto averaged = meanCompiled.run(tensors, withMean);
    REQUIRE(averaged);
    checkResults(*averaged, x, 1.0f);
    REQUIRE(meanRanks.calls.size() == 1);
    CHECK(meanRanks.calls[0].op == ReduceOp::Mean);

    // A communicator for the other memory space is refused, naming the step.
    MirroredCommunicator wrong(2, onDevice ? MemorySpace::Host : MemorySpace::Device);
    RunOptions withWrong;
    withWrong.communicator = &wrong;
    auto refused = compiled.run(tensors, withWrong);
    REQUIRE_FALSE(refused);
    CHECK(refused.error().code() == ErrorCode::InvalidArgument);
    CHECK_THAT(refused.error().message(),
               Catch::Contains("all_reduce step") &&
                   Catch::Contains(onDevice ? "reduces host buffers, but this model keeps its "
                                              "tensors on the device"
                                            : "reduces device buffers, but this model keeps its "
                                              "tensors on the host"));
    CHECK(wrong.calls.empty());
  }
}

TEST_CASE("all_reduce is never folded, even of a constant", "[compiler][dist]") {
  CompileCase c{"all-reduce-constant"};
  Tensor x = c.input("x", {3});
  Tensor ones = constant(c.graph(), HostTensor::fromDoubles(DType::F32, {3}, std::vector<double>{1, 1, 1}));
  Tensor reduced = c.graph().apply(ir::OpKind::AllReduce, {ones}, {{"op", std::string("sum")}},
                                   std::source_location::current());
  c.output("y", x + reduced);
  REQUIRE(c.graph().finalize());
  CompiledModel compiled = compileOrFail(c.graph().ir());
  MirroredCommunicator two(2, MemorySpace::Host);
  RunOptions options;
  options.communicator = &two;
  NamedTensors tensors = c.tensors();
  auto result = compiled.run(tensors, options);
  REQUIRE(result);
  CHECK(two.calls.size() == 1);
  for (int64_t i = 0; i < 3; ++i)
    CHECK(result->at("y").getDouble(i) ==
          static_cast<double>(static_cast<float>(tensors.at("x").getDouble(i)) + 2.0f));
}

TEST_CASE("the device executor waits for a step's collectives through the communicator",
          "[compiler][dist]") {
  ReduceModel sum("sum");
  CompiledModel compiled = compileFor(sum, TargetKind::Sim);
  NamedTensors tensors = sum.c.tensors();
  MirroredCommunicator two(2, MemorySpace::Device);
  RunOptions options;
  options.communicator = &two;
  REQUIRE(compiled.run(tensors, options));
  CHECK(two.synchronized == 1);
  // A bounded wait that fails (NCCL's: a peer never joined) is the run's error.
  two.failSynchronize = true;
  auto failed = compiled.run(tensors, options);
  REQUIRE_FALSE(failed);
  CHECK(failed.error().message() ==
        "allReduce #1 (20 f32, sum) on rank 0 of 2 (mirrored test ranks) timed out after 2 s");
  CHECK(two.synchronized == 2);
  two.failSynchronize = false;
  auto again = compiled.run(tensors, options);
  REQUIRE(again);
  checkResults(*again, tensors.at("x"), 2.0f);

  // A plan without collectives has nothing of the communicator's to wait for.
  CompileCase plain{"no-collective"};
  Tensor x = plain.input("x", {4, 5});
  plain.output("z", x * 3.0);
  REQUIRE(plain.graph().finalize());
  CompileOptions sim;
  sim.target = TargetKind::Sim;
  sim.gpuArch = "sm_80";
  CompiledModel plainCompiled = compileOrFail(plain.graph().ir(), sim);
  REQUIRE(plainCompiled.run(plain.tensors(), options));
  CHECK(two.synchronized == 3);
}

} // namespace
} // namespace kiln::test
