// cuDNN without a GPU: the library loads through dlopen and reports 9.x; a
// missing or foreign library gives a clear, optional-sounding error; and the
// host-only descriptor calls the conv2d kernel makes compute the same output
// shapes as kiln's conv2d shape inference.
#include "runtime/cudnn/CudnnLibrary.h"
#include "ScopedEnv.h"
#include "ir/graph/Graph.h"
#include "runtime/cudnn/CudnnConv2D.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <unistd.h>

using namespace kiln;
using namespace kiln::runtime::cudnn;
using kiln::test::ScopedEnv;

namespace {

constexpr const char *kToolkitCudnn = "/usr/local/cuda/lib64/libcudnn.so.9";

/// One conv2d case, in kiln's attribute terms.
struct ConvCase {
  ConvLayout layout;
  DType dtype;
  std::array<int64_t, 4> x; ///< in the layout's order
  std::array<int64_t, 4> w; ///< in the layout's order
  std::array<int64_t, 2> stride, padding, dilation;
  int64_t groups;
};

/// kiln's own answer: the conv2d node's inferred type.
std::array<int64_t, 4> kilnOutputShape(const ConvCase &c) {
  ir::Graph graph;
  auto x = graph.addInput("x", ir::TensorType{c.dtype, {c.x.begin(), c.x.end()}});
  auto w = graph.addParam("w", ir::TensorType{c.dtype, {c.w.begin(), c.w.end()}});
  REQUIRE(x);
  REQUIRE(w);
  ir::AttrMap attrs{
      {"accumulate", c.dtype == DType::F64 ? DType::F64 : DType::F32},
      {"dilation", std::vector<int64_t>{c.dilation[0], c.dilation[1]}},
      {"groups", c.groups},
      {"layout", std::string(c.layout == ConvLayout::Nhwc ? "nhwc" : "nchw")},
      {"padding", std::vector<int64_t>{c.padding[0], c.padding[0], c.padding[1], c.padding[1]}},
      {"stride", std::vector<int64_t>{c.stride[0], c.stride[1]}}};
  auto y = graph.addNode(ir::OpKind::Conv2D, {*x, *w}, attrs);
  if (!y)
    FAIL(y.error().str());
  const ir::Shape &shape = (*y)->type().shape;
  REQUIRE(shape.size() == 4);
  return {shape[0], shape[1], shape[2], shape[3]};
}

Conv2DProblem problemFor(const ConvCase &c, const std::array<int64_t, 4> &y) {
  bool nhwc = c.layout == ConvLayout::Nhwc;
  Conv2DProblem p;
  p.dtype = c.dtype;
  p.layout = c.layout;
  p.batch = c.x[0];
  p.inChannels = c.x[nhwc ? 3 : 1];
  p.height = c.x[nhwc ? 1 : 2];
  p.width = c.x[nhwc ? 2 : 3];
  p.outChannels = c.w[0];
  p.kernelH = c.w[nhwc ? 1 : 2];
  p.kernelW = c.w[nhwc ? 2 : 3];
  p.outHeight = y[nhwc ? 1 : 2];
  p.outWidth = y[nhwc ? 2 : 3];
  p.stride = c.stride;
  p.padding = c.padding;
  p.dilation = c.dilation;
  p.groups = c.groups;
  return p;
}

} // namespace

TEST_CASE("cuDNN 9 loads through dlopen and reports its version", "[cudnn]") {
  ScopedEnv unforced("KILN_CUDNN", nullptr);
  auto library = cudnnLibrary();
  REQUIRE(library); // the toolkit's cuDNN 9 is a build dependency
  CHECK((*library)->version / 10000 == 9);
  CHECK_THAT((*library)->versionText(), Catch::StartsWith("9."));
  CHECK(cudnnVersionText() == (*library)->versionText());
  CHECK(libcudnnCandidates().front() == "libcudnn.so.9");
}

TEST_CASE("the search ends with PyTorch's nvidia-cudnn wheel", "[cudnn]") {
  std::filesystem::path home =
      std::filesystem::temp_directory_path() / fmt::format("kiln-cudnn-home-{}", getpid());
  std::filesystem::path wheel =
      home / ".local/lib/python3.11/site-packages/nvidia/cudnn/lib/libcudnn.so.9";
  std::filesystem::create_directories(wheel.parent_path());
  std::fclose(std::fopen(wheel.c_str(), "w"));
  {
    ScopedEnv noForce("KILN_CUDNN", nullptr);
    ScopedEnv fakeHome("HOME", home.c_str());
    std::vector<std::string> candidates = libcudnnCandidates();
    CHECK(candidates.front() == "libcudnn.so.9");
    CHECK(candidates.back() == wheel.string());
  }
  std::filesystem::remove_all(home);
}

TEST_CASE("KILN_CUDNN names the one library tried", "[cudnn]") {
  SECTION("an absolute path to the toolkit's cuDNN loads") {
    REQUIRE(std::filesystem::exists(kToolkitCudnn));
    ScopedEnv forced("KILN_CUDNN", kToolkitCudnn);
    CHECK(libcudnnCandidates() == std::vector<std::string>{kToolkitCudnn});
    auto library = cudnnLibrary();
    REQUIRE(library);
    CHECK((*library)->libraryPath == kToolkitCudnn);
    // Its sub-libraries (the convolution descriptors live in libcudnn_cnn) load too.
    Conv2DProblem problem;
    problem.inChannels = 2;
    problem.outChannels = 2;
    problem.height = problem.width = problem.outHeight = problem.outWidth = 3;
    auto shape = cudnnConv2DOutputShape(problem);
    REQUIRE(shape);
    CHECK(*shape == std::array<int64_t, 4>{1, 2, 3, 3});
  }
  SECTION("a folder stands for the libcudnn.so.9 inside it") {
    std::string folder = std::filesystem::path(kToolkitCudnn).parent_path().string();
    ScopedEnv forced("KILN_CUDNN", folder.c_str());
    CHECK(libcudnnCandidates() == std::vector<std::string>{fmt::format("{}/libcudnn.so.9", folder)});
  }
  SECTION("a missing file is Unavailable, names it, and says cuDNN is optional") {
    ScopedEnv forced("KILN_CUDNN", "/nonexistent/libcudnn.so.9");
    auto library = cudnnLibrary();
    REQUIRE_FALSE(library);
    CHECK(library.error().code() == ErrorCode::Unavailable);
    CHECK_THAT(library.error().message(),
               Catch::StartsWith("cuDNN is unavailable: KILN_CUDNN=/nonexistent/libcudnn.so.9: "));
    CHECK_THAT(library.error().message(), Catch::Contains("No such file"));
    CHECK_THAT(library.error().str(), Catch::Contains("cuDNN is optional"));
    CHECK_THAT(library.error().str(), Catch::Contains("unset KILN_CUDNN"));
    CHECK(cudnnVersionText() == "unavailable");
    // The conv2d kernel's host-side calls report the same.
    auto shape = cudnnConv2DOutputShape(Conv2DProblem{});
    REQUIRE_FALSE(shape);
    CHECK(shape.error().code() == ErrorCode::Unavailable);
  }
  SECTION("a library that is not cuDNN is named as such") {
    const char *stub = "/usr/local/cuda/lib64/stubs/libcuda.so";
    REQUIRE(std::filesystem::exists(stub));
    ScopedEnv forced("KILN_CUDNN", stub);
    auto library = cudnnLibrary();
    REQUIRE_FALSE(library);
    CHECK(library.error().code() == ErrorCode::Unavailable);
    CHECK_THAT(library.error().message(), Catch::Contains("is not a usable cuDNN 9: it lacks"));
    CHECK_THAT(library.error().message(), Catch::Contains("cudnnGetVersion"));
  }
}

TEST_CASE("cuDNN's conv2d descriptors give kiln's output shapes", "[cudnn]") {
  ScopedEnv unforced("KILN_CUDNN", nullptr);
  using L = ConvLayout;
  const ConvCase cases[] = {
      {L::Nchw, DType::F32, {2, 3, 9, 9}, {4, 3, 3, 3}, {1, 1}, {0, 0}, {1, 1}, 1},
      {L::Nchw, DType::F32, {1, 5, 17, 13}, {7, 5, 3, 5}, {2, 3}, {1, 2}, {1, 1}, 1},
      {L::Nchw, DType::F16, {3, 4, 11, 7}, {6, 2, 3, 3}, {1, 2}, {2, 1}, {2, 1}, 2},
      {L::Nchw, DType::BF16, {1, 6, 8, 8}, {6, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, 6},
      {L::Nhwc, DType::F16, {2, 9, 7, 3}, {4, 3, 2, 3}, {2, 1}, {0, 1}, {1, 3}, 1},
      {L::Nhwc, DType::F64, {1, 10, 10, 8}, {8, 5, 5, 2}, {3, 3}, {2, 2}, {1, 1}, 4},
  };
  for (const ConvCase &c : cases) {
    std::array<int64_t, 4> expected = kilnOutputShape(c);
    Conv2DProblem problem = problemFor(c, expected);
    INFO(problem.str());
    auto shape = cudnnConv2DOutputShape(problem);
    REQUIRE(shape);
    CHECK(*shape == expected);
  }
}

TEST_CASE("cuDNN conv2d problems it cannot describe are errors", "[cudnn]") {
  ScopedEnv unforced("KILN_CUDNN", nullptr);
  Conv2DProblem problem;
  problem.inChannels = problem.outChannels = 4;
  problem.height = problem.width = problem.outHeight = problem.outWidth = 5;

  Conv2DProblem integer = problem;
  integer.dtype = DType::I8;
  auto shape = cudnnConv2DOutputShape(integer);
  REQUIRE_FALSE(shape);
  CHECK(shape.error().code() == ErrorCode::Unsupported);
  CHECK_THAT(shape.error().message(), Catch::Contains("dtype i8"));

  Conv2DProblem huge = problem;
  huge.batch = int64_t{1} << 32;
  shape = cudnnConv2DOutputShape(huge);
  REQUIRE_FALSE(shape);
  CHECK(shape.error().code() == ErrorCode::Unsupported);
  CHECK_THAT(shape.error().message(), Catch::Contains("int range"));

  Conv2DProblem badGroups = problem;
  badGroups.groups = 3;
  shape = cudnnConv2DOutputShape(badGroups);
  REQUIRE_FALSE(shape);
  CHECK(shape.error().code() == ErrorCode::InvalidArgument);
  CHECK_THAT(shape.error().message(), Catch::Contains("groups must divide"));
}

TEST_CASE("cuDNN configuration text round-trips and rejects bad fields", "[cudnn]") {
  CudnnConvChoice choice{1, 1, true};
  std::string text = cudnnChoiceText(choice);
  CHECK(text == "algo=implicit_precomp_gemm math=tensor_op epilogue=fused");
  auto parsed = parseCudnnChoice(text + " workspace=4096");
  REQUIRE(parsed);
  CHECK(parsed->algorithm == 1);
  CHECK(parsed->mathType == 1);
  CHECK(parsed->fusedEpilogue);
  parsed = parseCudnnChoice("algo=winograd_nonfused math=fma epilogue=separate");
  REQUIRE(parsed);
  CHECK(cudnnChoiceText(*parsed) == "algo=winograd_nonfused math=fma epilogue=separate");

  auto bad = parseCudnnChoice("algo=magic math=fma epilogue=fused");
  REQUIRE_FALSE(bad);
  CHECK(bad.error().code() == ErrorCode::InvalidArgument);
  CHECK_THAT(bad.error().message(), Catch::Contains("unknown algorithm 'magic'"));
  bad = parseCudnnChoice("algo=gemm epilogue=fused");
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().message(), Catch::Contains("lacks math="));
  bad = parseCudnnChoice("algo=gemm math=fma epilogue=maybe");
  REQUIRE_FALSE(bad);
  CHECK_THAT(bad.error().message(), Catch::Contains("'fused' or 'separate'"));
}
