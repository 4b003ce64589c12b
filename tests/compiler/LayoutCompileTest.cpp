// An NCHW CNN under bf16-mixed on a GPU target: the layout pass runs its
// convolutions as NHWC on tensor cores (mma in the kernels), keeps the
// first one (three input channels) on CUDA cores, and the results match the
// f64 reference within bf16-mixed's tolerance. The CPU pipeline runs every
// convolution of the chain as NHWC (layout-cpu). Under fp8 the same happens
// with e4m3 tensor cores where the target has them (sm_89 on), and the dense
// head's weight is read K-contiguous.
#include "CompileTestUtil.h"
#include "SmallCnn.h"

#include <sstream>

namespace kiln::test {
namespace {

size_t countOccurrences(const std::string &text, std::string_view what) {
  size_t count = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1))
    ++count;
  return count;
}

/// The kernels of a kDumpKernel dump whose kernel IR has an mma statement.
int kernelsUsingMma(const std::string &dump) {
  constexpr std::string_view kHeader = "// ---- kernel ";
  int count = 0;
  for (size_t at = dump.find(kHeader); at != std::string::npos;) {
    size_t next = dump.find(kHeader, at + 1);
    std::string_view kernel(dump.data() + at,
                            (next == std::string::npos ? dump.size() : next) - at);
    count += kernel.find(" mma mmaKind=") != std::string_view::npos;
    at = next;
  }
  return count;
}

/// The small CNN compiled for `target`/`arch` under `policy` and checked against the fp64
/// reference within the policy's tolerance; returns the graph and kernel dumps.
struct CompiledCnn {
  std::string graphText, text;
};

CompiledCnn compileSmallCnn(TargetKind target, const std::string &arch,
                            passes::PrecisionPolicy policy) {
  Graph graph("cnn", freshSeed());
  buildSmallCnn(graph);
  REQUIRE(graph.finalize());
  Rng rng(freshSeed());
  NamedTensors inputs{{"images", randomTensor(DType::F32, {2, 3, 9, 9}, rng)}};
  std::ostringstream dump;
  CompileOptions options;
  options.target = target;
  options.gpuArch = arch;
  options.precision = policy;
  options.dump = kDumpGraph | kDumpKernel;
  options.dumpStream = &dump;
  checkPolicyNumerics(graph.ir(), inputs, graph.paramValues(), options);
  std::string text = dump.str();
  return {text.substr(0, text.find("// ---- kernel")), text};
}

} // namespace

TEST_CASE("bf16-mixed NCHW convolutions run as NHWC on tensor cores on a GPU target",
          "[compiler][layout]") {
  TargetKind target = GENERATE(TargetKind::Sim, TargetKind::Cpu);
  CAPTURE(targetKindName(target));
  auto [graphText, text] = compileSmallCnn(target, "sm_80", passes::PrecisionPolicy::Bf16Mixed);
  INFO(graphText);
  if (target == TargetKind::Sim) {
    // The two convolutions with 8 and 16 input channels moved; the first
    // (3 channels: 6 bytes a pixel) stayed.
    CHECK(countOccurrences(graphText, "layout = \"nhwc\"") >= 2);
    CHECK(countOccurrences(graphText, "conv2d(") == 3);
    // Both convolutions' kernels run mma (the dense head's may too, but its
    // 5 output columns are not whole 4-byte pairs of bf16: CUDA cores).
    CHECK(kernelsUsingMma(text) == 2);
  } else {
    // The CPU runs every convolution of one group as NHWC, whatever its operands
    // ("layout-cpu"), the 3-channel first one included (and the pool between them).
    CHECK(countOccurrences(graphText, "layout = \"nchw\"") == 0);
    CHECK(countOccurrences(graphText, "layout = \"nhwc\"") >= 3);
    CHECK(countOccurrences(graphText, "conv2d(") == 3);
  }
}

TEST_CASE("fp8 convolutions and matmuls run on e4m3 tensor cores from sm_89 on",
          "[compiler][layout]") {
  std::string arch = GENERATE(std::string("sm_90a"), std::string("sm_80"));
  CAPTURE(arch);
  auto [graphText, text] = compileSmallCnn(TargetKind::Sim, arch, passes::PrecisionPolicy::Fp8);
  INFO(graphText);
  if (arch == "sm_90a") {
    CHECK(countOccurrences(graphText, "layout = \"nhwc\"") >= 2);
    // kmajor: the head's weight [256, 5] is read as its transpose [5, 256].
    CHECK(countOccurrences(graphText, "transpose_b = true") == 1);
    // The two convolutions and the head (K-contiguous e4m3 rows of 256 bytes).
    CHECK(kernelsUsingMma(text) == 3);
  } else {
    // sm_80 has no e4m3 product: fp8 stays on CUDA cores, the layout as written.
    CHECK(countOccurrences(graphText, "layout = \"nhwc\"") == 0);
    CHECK(countOccurrences(graphText, "transpose_b = true") == 0);
    CHECK(kernelsUsingMma(text) == 0);
  }
}

} // namespace kiln::test
