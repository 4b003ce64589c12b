// The copy loop of an implicit-im2col conv2d in the PTX the whole pipeline makes: the window's
// corner (output pixel) and the tap's step (K) are separate terms of each gathered address, so
// LLVM computes the corner once per copied row outside the K loop and the tap once per K tile,
// and a copy inside the loop is a few adds, its bounds test in 32 bits and a choice of address
// -- no 64-bit multiply (the (n H + ih) W + iw chain multiplied per copy before). The numerics of
// these kernels are GpuMmaConv2DTest's and GpuWgmmaMatMulTest's, on the simulator.
#include "CompileTestUtil.h"

#include "passes/lower/gpu/GpuContraction.h"

#include <regex>
#include <set>
#include <sstream>

namespace kiln::test {
namespace {

constexpr const char *kCopy = "cp.async.cg.shared.global";

struct PtxBlock {
  std::string label;
  std::vector<std::string> instructions; ///< the opcode of each, predicate guard dropped
  std::vector<std::string> branchTargets;
};

/// The basic blocks of one PTX module, in order (a label starts a block).
std::vector<PtxBlock> ptxBlocks(const std::string &ptx) {
  std::vector<PtxBlock> blocks{{"entry", {}, {}}};
  std::istringstream lines(ptx);
  static const std::regex label(R"(^\s*(\$L__BB\d+_\d+):)");
  static const std::regex branch(R"(bra(\.uni)?\s+(\$L__BB\d+_\d+);)");
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_search(line, m, label)) {
      blocks.push_back({m[1].str(), {}, {}});
      continue;
    }
    if (std::regex_search(line, m, branch))
      blocks.back().branchTargets.push_back(m[2].str());
    std::istringstream words(line);
    std::string op;
    words >> op;
    if (!op.empty() && op[0] == '@')
      words >> op;
    // Directives, comments, braces and an instruction's operand lines are not instructions.
    if (op.empty() || op[0] == '.' || op[0] == '/' || op[0] == '{' || op[0] == '}' ||
        op[0] == '%')
      continue;
    blocks.back().instructions.push_back(op);
  }
  return blocks;
}

/// The blocks that sit inside a loop (from a label to the last block that branches back to it)
/// and issue a cp.async: the K loop's copies of a later tile.
std::vector<PtxBlock> loopCopyBlocks(const std::string &ptx) {
  std::vector<PtxBlock> blocks = ptxBlocks(ptx);
  std::set<size_t> inLoop;
  for (size_t head = 0; head < blocks.size(); ++head)
    for (size_t tail = head; tail < blocks.size(); ++tail)
      for (const std::string &target : blocks[tail].branchTargets)
        if (target == blocks[head].label)
          for (size_t b = head; b <= tail; ++b)
            inLoop.insert(b);
  std::vector<PtxBlock> copyBlocks;
  for (size_t b : inLoop) {
    const auto &ops = blocks[b].instructions;
    if (std::find(ops.begin(), ops.end(), kCopy) != ops.end())
      copyBlocks.push_back(blocks[b]);
  }
  return copyBlocks;
}

} // namespace

TEST_CASE("an implicit im2col's copies compute the window corner outside the K loop",
          "[compiler][mma][wgmma]") {
  struct ConvCase {
    int64_t images, height, width, channels, outChannels, kernel, stride, pad;
    bool wgmma;
  };
  // VGG16's first layer (narrow N: the copies cost the most per product), a ResNet layer, an
  // odd one with stride 2, and the first on warpgroup products.
  for (ConvCase c : {ConvCase{8, 224, 224, 64, 64, 3, 1, 1, false},
                     ConvCase{32, 28, 28, 128, 128, 3, 1, 1, false},
                     ConvCase{3, 37, 29, 32, 48, 3, 2, 1, false},
                     ConvCase{8, 224, 224, 64, 64, 3, 1, 1, true}}) {
    INFO(c.images << "x" << c.height << "x" << c.width << "x" << c.channels << " -> "
                  << c.outChannels << ", " << c.kernel << "x" << c.kernel << " stride "
                  << c.stride << (c.wgmma ? ", wgmma" : ""));
    Graph graph("implicit_gemm_copies", freshSeed());
    Tensor x = graph.input("x", {c.images, c.height, c.width, c.channels}, DType::BF16);
    Tensor w = graph.input("w", {c.outChannels, c.kernel, c.kernel, c.channels}, DType::BF16);
    Conv2DOptions options;
    options.layout = Layout::NHWC;
    options.stride = {c.stride, c.stride};
    options.padding = Padding::symmetric(c.pad, c.pad);
    graph.output("y", conv2d(x, w, options));
    REQUIRE(graph.finalize());
    const codegen::GpuTarget sm90a = *codegen::gpuTargetNamed("sm_90a");
    CompileOptions compile = sm90aPtxOptions();
    compile.chooseSchedule = [&](const ir::Graph &g, const passes::FusionGroup &group) {
      return c.wgmma ? lower::wgmmaContractionSchedule(group, sm90a, /*tma=*/false)
                     : lower::defaultGpuContractionSchedule(g, group, sm90a);
    };
    auto kernels = compileGpuKernels(graph.ir(), compile);
    REQUIRE(kernels);
    std::vector<PtxBlock> blocks = loopCopyBlocks(kernels->ptx);
    REQUIRE(!blocks.empty());
    for (const PtxBlock &block : blocks) {
      const std::vector<std::string> &ops = block.instructions;
      std::string listing;
      for (const std::string &op : ops)
        listing += op + " ";
      INFO("a copy block of the K loop: " << listing);
      CHECK(std::count(ops.begin(), ops.end(), "mul.lo.s64") == 0);
      // The window's bounds in 32 bits: a 64-bit compare or max is two GPU instructions or
      // more.
      for (const char *wide : {"max.u64", "max.s64", "setp.lt.u64", "setp.lt.s64", "setp.ge.s64"})
        CHECK(std::count(ops.begin(), ops.end(), wide) == 0);
      // The first copy follows the tap's decomposition (once per tile); each later one costs
      // its own instructions only: its shared address, the row's address plus the tap's,
      // two bounds adds, a max and compare, two selects and the copy -- ten, where the
      // per-copy multiply chain made fourteen.
      size_t previous = std::find(ops.begin(), ops.end(), kCopy) - ops.begin();
      for (size_t at = previous + 1; at < ops.size(); ++at)
        if (ops[at] == kCopy) {
          CHECK(at - previous <= 10);
          previous = at;
        }
    }
  }
}

TEST_CASE("an image too wide for 32-bit window bounds keeps them in 64 bits", "[compiler][mma]") {
  // A row of 2^30 + 128 pixels, where corner + tap could wrap a 32-bit compare: the copies'
  // bounds stay 64-bit (compiled only; the input would be 192 GiB of bf16), where the narrow
  // image beside it tests them in 32. M is whole tiles and K = 288 whole K tiles, so the
  // window's are the only compares in the copy blocks.
  for (int64_t width : {int64_t(1) << 20, (int64_t(1) << 30) + 128}) {
    INFO("width " << width);
    Graph graph("wide_image", freshSeed());
    Tensor x = graph.input("x", {1, 3, width, 32}, DType::BF16);
    Tensor w = graph.input("w", {16, 3, 3, 32}, DType::BF16); // K = 288: no K edge
    Conv2DOptions options;
    options.layout = Layout::NHWC;
    options.padding = Padding::symmetric(1, 1);
    graph.output("y", conv2d(x, w, options));
    REQUIRE(graph.finalize());
    auto kernels = compileGpuKernels(graph.ir(), sm90aPtxOptions());
    REQUIRE(kernels);
    std::vector<PtxBlock> blocks = loopCopyBlocks(kernels->ptx);
    REQUIRE(!blocks.empty());
    size_t wide = 0;
    for (const PtxBlock &block : blocks)
      for (const std::string &op : block.instructions)
        wide += op == "setp.lt.u64" || op == "setp.lt.s64" || op == "setp.ge.s64" ||
                op == "max.u64" || op == "max.s64";
    if (width < (int64_t(1) << 30))
      CHECK(wide == 0);
    else
      CHECK(wide > 0);
  }
}

} // namespace kiln::test
