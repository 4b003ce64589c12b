// The few cuDNN entry points a forward convolution needs, resolved with dlsym. The types are
// spelled as cuDNN's ABI has them (handles and descriptors are pointers, enums are ints), so
// no cuDNN header is needed to build the benchmark.
#include "bench/gpu/Cudnn.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <dlfcn.h>
#include <filesystem>
#include <glob.h>
#include <vector>

namespace kiln::bench {

namespace {

// Enum values from cuDNN 9.19's headers (cudnn_graph.h: cudnnStatus_t, cudnnDataType_t,
// cudnnMathType_t, cudnnTensorFormat_t, cudnnConvolutionMode_t; cudnn_ops.h:
// cudnnConvolutionFwdAlgo_t). They are ABI, unchanged across cuDNN 9.
constexpr int kCudnnStatusSuccess = 0;   // CUDNN_STATUS_SUCCESS
constexpr int kCudnnDataFloat = 0;       // CUDNN_DATA_FLOAT
constexpr int kCudnnDataBfloat16 = 9;    // CUDNN_DATA_BFLOAT16
constexpr int kCudnnDefaultMath = 0;     // CUDNN_DEFAULT_MATH
constexpr int kCudnnTensorOpMath = 1;    // CUDNN_TENSOR_OP_MATH
constexpr int kCudnnTensorOpMathAllowConversion = 2; // CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION
// CUDNN_FMA_MATH: the CUDA cores only. CUDNN_DEFAULT_MATH would let fp32 convolutions run in
// tf32 on the tensor cores (unless NVIDIA_TF32_OVERRIDE=0), a different contest.
constexpr int kCudnnFmaMath = 3;
constexpr int kCudnnTensorNchw = 0;      // CUDNN_TENSOR_NCHW
constexpr int kCudnnTensorNhwc = 1;      // CUDNN_TENSOR_NHWC
constexpr int kCudnnCrossCorrelation = 1; // CUDNN_CROSS_CORRELATION: conv2d as kiln means it
constexpr int kCudnnFwdAlgoCount = 8;    // CUDNN_CONVOLUTION_FWD_ALGO_COUNT
/// cudnnConvolutionFwdAlgo_t's names, in its order (CUDNN_CONVOLUTION_FWD_ALGO_<name>).
constexpr std::array<std::string_view, kCudnnFwdAlgoCount> kFwdAlgoNames = {
    "IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT",
    "FFT",           "FFT_TILING",            "WINOGRAD", "WINOGRAD_NONFUSED"};
/// Find's workspace for trying the algorithms: those that need more are not tried.
constexpr int64_t kMaxFindWorkspace = int64_t{1} << 30;

/// cudnnConvolutionFwdAlgoPerf_t (cudnn_cnn.h): algo, status, time (ms), memory (workspace
/// bytes), determinism, mathType, reserved[3]; enums are ints.
struct FwdAlgoPerf {
  int algorithm;
  int status;
  float milliseconds;
  size_t memory;
  int determinism;
  int mathType;
  int reserved[3];
};
static_assert(sizeof(FwdAlgoPerf) == 48, "cudnnConvolutionFwdAlgoPerf_t is 48 bytes on LP64");

std::string mathTypeName(int mathType) {
  switch (mathType) {
  case kCudnnDefaultMath: return "default math";
  case kCudnnTensorOpMath: return "tensor op math";
  case kCudnnTensorOpMathAllowConversion: return "tensor op math (with conversion)";
  case kCudnnFmaMath: return "FMA math";
  default: return fmt::format("math type {}", mathType);
  }
}

/// The places a cuDNN 9 library may be, in the order tried (see Cudnn::open).
std::vector<std::string> libraryCandidates() {
  std::vector<std::string> candidates = {"libcudnn.so.9", "libcudnn.so"};
  std::vector<std::string> toolkits;
  if (const char *cudaHome = std::getenv("CUDA_HOME"); cudaHome && *cudaHome)
    toolkits.push_back(cudaHome);
  toolkits.push_back("/usr/local/cuda");
  for (const std::string &toolkit : toolkits)
    for (const char *lib : {"lib", "lib64"})
      candidates.push_back(fmt::format("{}/{}/libcudnn.so.9", toolkit, lib));
  // The nvidia-cudnn-cu1x wheels PyTorch depends on: .../site-packages/nvidia/cudnn/lib.
  std::vector<std::string> pythonRoots = {"/opt/*/.venv", "/opt/*", "/usr/local", "/usr"};
  for (const char *variable : {"VIRTUAL_ENV", "CONDA_PREFIX"})
    if (const char *root = std::getenv(variable); root && *root)
      pythonRoots.insert(pythonRoots.begin(), root);
  if (const char *home = std::getenv("HOME"); home && *home)
    pythonRoots.push_back(fmt::format("{}/.local", home));
  for (const std::string &root : pythonRoots)
    for (const char *packages : {"site-packages", "dist-packages"}) {
      std::string pattern =
          fmt::format("{}/lib/python3*/{}/nvidia/*/lib/libcudnn.so.9", root, packages);
      glob_t found{};
      if (glob(pattern.c_str(), 0, nullptr, &found) == 0)
        for (size_t i = 0; i < found.gl_pathc; ++i)
          candidates.push_back(found.gl_pathv[i]);
      globfree(&found);
    }
  return candidates;
}

} // namespace

struct Cudnn::Api {
  size_t (*getVersion)() = nullptr;
  const char *(*getErrorString)(int status) = nullptr;
  void (*getLastErrorString)(char *message, size_t size) = nullptr; // optional
  int (*create)(void **handle) = nullptr;
  int (*destroy)(void *handle) = nullptr;
  int (*setStream)(void *handle, void *stream) = nullptr;
  int (*createTensorDescriptor)(void **descriptor) = nullptr;
  int (*setTensor4dDescriptor)(void *descriptor, int format, int dataType, int n, int c, int h,
                               int w) = nullptr;
  int (*destroyTensorDescriptor)(void *descriptor) = nullptr;
  int (*createFilterDescriptor)(void **descriptor) = nullptr;
  // Note the order: data type before format, unlike cudnnSetTensor4dDescriptor.
  int (*setFilter4dDescriptor)(void *descriptor, int dataType, int format, int k, int c, int h,
                               int w) = nullptr;
  int (*destroyFilterDescriptor)(void *descriptor) = nullptr;
  int (*createConvolutionDescriptor)(void **descriptor) = nullptr;
  int (*setConvolution2dDescriptor)(void *descriptor, int padH, int padW, int strideH,
                                    int strideW, int dilationH, int dilationW, int mode,
                                    int computeType) = nullptr;
  int (*setConvolutionMathType)(void *descriptor, int mathType) = nullptr;
  int (*setConvolutionGroupCount)(void *descriptor, int groups) = nullptr;
  int (*destroyConvolutionDescriptor)(void *descriptor) = nullptr;
  int (*getConvolution2dForwardOutputDim)(void *convolution, void *x, void *w, int *n, int *c,
                                          int *h, int *width) = nullptr;
  int (*getConvolutionForwardWorkspaceSize)(void *handle, void *x, void *w, void *convolution,
                                            void *y, int algorithm, size_t *bytes) = nullptr;
  int (*findConvolutionForwardAlgorithmEx)(void *handle, void *xDesc, const void *x,
                                           void *wDesc, const void *w, void *convolution,
                                           void *yDesc, void *y, int requested, int *returned,
                                           FwdAlgoPerf *results, void *workspace,
                                           size_t workspaceBytes) = nullptr;
  int (*convolutionForward)(void *handle, const void *alpha, void *xDesc, const void *x,
                            void *wDesc, const void *w, void *convolution, int algorithm,
                            void *workspace, size_t workspaceBytes, const void *beta,
                            void *yDesc, void *y) = nullptr;
};

Expected<std::unique_ptr<Cudnn>> Cudnn::open(runtime::Stream stream) {
  std::vector<std::string> candidates;
  const char *override = std::getenv("KILN_CUDNN");
  if (override && *override) {
    // An explicit choice is the only one tried: falling back would hide a wrong path.
    std::filesystem::path path = override;
    candidates.push_back(std::filesystem::is_directory(path) ? (path / "libcudnn.so.9").string()
                                                             : path.string());
  } else {
    candidates = libraryCandidates();
  }
  std::unique_ptr<Cudnn> cudnn(new Cudnn);
  std::string tried;
  for (const std::string &candidate : candidates) {
    cudnn->library_ = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (cudnn->library_) {
      cudnn->libraryName_ = candidate;
      break;
    }
    tried += fmt::format("\n  {}: {}", candidate, dlerror());
  }
  if (!cudnn->library_)
    return makeError(ErrorCode::NotFound,
                     fmt::format("cuDNN 9 is not installed where kiln_gpu_bench looks (set "
                                 "KILN_CUDNN to libcudnn.so.9 or its folder, e.g. PyTorch's "
                                 "site-packages/nvidia/cudnn/lib); tried:{}",
                                 tried));
  auto api = std::make_unique<Api>();
  auto resolve = [&](auto &slot, const char *symbol) -> Expected<void> {
    void *address = dlsym(cudnn->library_, symbol);
    if (!address)
      return makeError(ErrorCode::Unavailable,
                       fmt::format("{} has no symbol {}", cudnn->libraryName_, symbol));
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(address);
    return {};
  };
  KILN_TRY_VOID(resolve(api->getVersion, "cudnnGetVersion"));
  KILN_TRY_VOID(resolve(api->getErrorString, "cudnnGetErrorString"));
  KILN_TRY_VOID(resolve(api->create, "cudnnCreate"));
  KILN_TRY_VOID(resolve(api->destroy, "cudnnDestroy"));
  KILN_TRY_VOID(resolve(api->setStream, "cudnnSetStream"));
  KILN_TRY_VOID(resolve(api->createTensorDescriptor, "cudnnCreateTensorDescriptor"));
  KILN_TRY_VOID(resolve(api->setTensor4dDescriptor, "cudnnSetTensor4dDescriptor"));
  KILN_TRY_VOID(resolve(api->destroyTensorDescriptor, "cudnnDestroyTensorDescriptor"));
  KILN_TRY_VOID(resolve(api->createFilterDescriptor, "cudnnCreateFilterDescriptor"));
  KILN_TRY_VOID(resolve(api->setFilter4dDescriptor, "cudnnSetFilter4dDescriptor"));
  KILN_TRY_VOID(resolve(api->destroyFilterDescriptor, "cudnnDestroyFilterDescriptor"));
  KILN_TRY_VOID(resolve(api->createConvolutionDescriptor, "cudnnCreateConvolutionDescriptor"));
  KILN_TRY_VOID(resolve(api->setConvolution2dDescriptor, "cudnnSetConvolution2dDescriptor"));
  KILN_TRY_VOID(resolve(api->setConvolutionMathType, "cudnnSetConvolutionMathType"));
  KILN_TRY_VOID(resolve(api->setConvolutionGroupCount, "cudnnSetConvolutionGroupCount"));
  KILN_TRY_VOID(
      resolve(api->destroyConvolutionDescriptor, "cudnnDestroyConvolutionDescriptor"));
  KILN_TRY_VOID(resolve(api->getConvolution2dForwardOutputDim,
                        "cudnnGetConvolution2dForwardOutputDim"));
  KILN_TRY_VOID(resolve(api->getConvolutionForwardWorkspaceSize,
                        "cudnnGetConvolutionForwardWorkspaceSize"));
  KILN_TRY_VOID(resolve(api->findConvolutionForwardAlgorithmEx,
                        "cudnnFindConvolutionForwardAlgorithmEx"));
  KILN_TRY_VOID(resolve(api->convolutionForward, "cudnnConvolutionForward"));
  api->getLastErrorString = reinterpret_cast<void (*)(char *, size_t)>(
      dlsym(cudnn->library_, "cudnnGetLastErrorString"));
  cudnn->api_ = std::move(api);
  if (size_t version = cudnn->api_->getVersion(); version / 10000 != 9)
    return makeError(ErrorCode::Unavailable,
                     fmt::format("{} is cuDNN {}, not 9 (the legacy convolution API this "
                                 "benchmark uses is cuDNN 9's)",
                                 cudnn->libraryName_, cudnn->version()));
  KILN_TRY_VOID(cudnn->check(cudnn->api_->create(&cudnn->handle_), "cudnnCreate"));
  // kiln's streams are CUstreams; the runtime API's cudaStream_t is the same handle.
  KILN_TRY_VOID(
      cudnn->check(cudnn->api_->setStream(cudnn->handle_, stream.handle), "cudnnSetStream"));
  return cudnn;
}

Cudnn::~Cudnn() {
  if (handle_ && api_)
    api_->destroy(handle_);
  // The library stays loaded: unloading cuDNN while the CUDA runtime it started is alive
  // is not safe.
}

std::string Cudnn::version() const {
  size_t version = api_->getVersion();
  return fmt::format("{}.{}.{}", version / 10000, version % 10000 / 100, version % 100);
}

Expected<void> Cudnn::check(int status, std::string_view what) const {
  if (status == kCudnnStatusSuccess)
    return {};
  std::string detail;
  if (api_->getLastErrorString) {
    std::array<char, 512> message{};
    api_->getLastErrorString(message.data(), message.size());
    if (message[0])
      detail = fmt::format(": {}", message.data());
  }
  return makeError(ErrorCode::Unavailable, fmt::format("{} failed with {} ({}){}", what,
                                                       api_->getErrorString(status), status,
                                                       detail));
}

Expected<std::unique_ptr<Cudnn::Convolution>>
Cudnn::planConvolution(runtime::Device &device, const CudnnConvShape &shape,
                       runtime::DevicePtr x, runtime::DevicePtr w, runtime::DevicePtr y) {
  int dataType = 0;
  switch (shape.dtype) {
  case DType::F32: dataType = kCudnnDataFloat; break;
  case DType::BF16: dataType = kCudnnDataBfloat16; break;
  default:
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("cuDNN convolution: f32 or bf16 data, not {}",
                                 dtypeName(shape.dtype)));
  }
  const int format = shape.nhwc ? kCudnnTensorNhwc : kCudnnTensorNchw;
  const Api &api = *api_;
  std::unique_ptr<Convolution> plan(new Convolution(*this));
  KILN_TRY_VOID(check(api.createTensorDescriptor(&plan->x_), "cudnnCreateTensorDescriptor"));
  KILN_TRY_VOID(check(api.createTensorDescriptor(&plan->y_), "cudnnCreateTensorDescriptor"));
  KILN_TRY_VOID(check(api.createFilterDescriptor(&plan->w_), "cudnnCreateFilterDescriptor"));
  KILN_TRY_VOID(check(api.createConvolutionDescriptor(&plan->convolution_),
                      "cudnnCreateConvolutionDescriptor"));
  // Dimensions are given in N, C, H, W order whatever the format; the format is the memory
  // order (for the filter, NHWC is [K, R, S, C]).
  KILN_TRY_VOID(check(api.setTensor4dDescriptor(plan->x_, format, dataType, shape.images,
                                                shape.channels, shape.height, shape.width),
                      "cudnnSetTensor4dDescriptor (x)"));
  KILN_TRY_VOID(check(api.setFilter4dDescriptor(plan->w_, dataType, format, shape.filters,
                                                shape.channels / shape.groups, shape.kernelH,
                                                shape.kernelW),
                      "cudnnSetFilter4dDescriptor"));
  // Compute type float for both: bf16 data accumulates in f32, as kiln's does.
  KILN_TRY_VOID(check(api.setConvolution2dDescriptor(plan->convolution_, shape.padH, shape.padW,
                                                     shape.strideH, shape.strideW, 1, 1,
                                                     kCudnnCrossCorrelation, kCudnnDataFloat),
                      "cudnnSetConvolution2dDescriptor"));
  KILN_TRY_VOID(check(api.setConvolutionGroupCount(plan->convolution_, shape.groups),
                      "cudnnSetConvolutionGroupCount"));
  plan->mathType_ = shape.dtype == DType::F32 ? kCudnnFmaMath : kCudnnTensorOpMath;
  KILN_TRY_VOID(check(api.setConvolutionMathType(plan->convolution_, plan->mathType_),
                      "cudnnSetConvolutionMathType"));
  int n = 0, c = 0, h = 0, wOut = 0;
  KILN_TRY_VOID(check(api.getConvolution2dForwardOutputDim(plan->convolution_, plan->x_,
                                                           plan->w_, &n, &c, &h, &wOut),
                      "cudnnGetConvolution2dForwardOutputDim"));
  if (n != shape.images || c != shape.filters || h != shape.outHeight() ||
      wOut != shape.outWidth())
    return makeError(ErrorCode::ShapeMismatch,
                     fmt::format("cuDNN's output is [{}, {}, {}, {}] (N, C, H, W), expected "
                                 "[{}, {}, {}, {}]",
                                 n, c, h, wOut, shape.images, shape.filters, shape.outHeight(),
                                 shape.outWidth()));
  KILN_TRY_VOID(check(api.setTensor4dDescriptor(plan->y_, format, dataType, n, c, h, wOut),
                      "cudnnSetTensor4dDescriptor (y)"));

  // Find runs each algorithm with a workspace as large as the largest one asks for (up to
  // kMaxFindWorkspace); an algorithm that does not apply answers with an error, skipped here.
  int64_t findBytes = 0;
  for (int algorithm = 0; algorithm < kCudnnFwdAlgoCount; ++algorithm) {
    size_t bytes = 0;
    if (api.getConvolutionForwardWorkspaceSize(handle_, plan->x_, plan->w_, plan->convolution_,
                                               plan->y_, algorithm,
                                               &bytes) == kCudnnStatusSuccess)
      findBytes = std::max(findBytes, std::min(static_cast<int64_t>(bytes), kMaxFindWorkspace));
  }
  std::optional<DeviceBuffer> findWorkspace;
  if (findBytes > 0) {
    KILN_TRY(DeviceBuffer buffer, DeviceBuffer::allocate(device, findBytes));
    findWorkspace.emplace(std::move(buffer));
  }
  std::array<FwdAlgoPerf, kCudnnFwdAlgoCount> results{};
  int returned = 0;
  KILN_TRY_VOID(check(api.findConvolutionForwardAlgorithmEx(
                          handle_, plan->x_, reinterpret_cast<const void *>(x), plan->w_,
                          reinterpret_cast<const void *>(w), plan->convolution_, plan->y_,
                          reinterpret_cast<void *>(y), kCudnnFwdAlgoCount, &returned,
                          results.data(),
                          findWorkspace ? reinterpret_cast<void *>(findWorkspace->ptr())
                                        : nullptr,
                          static_cast<size_t>(findBytes)),
                      "cudnnFindConvolutionForwardAlgorithmEx"));
  // The results come fastest first. fp32 keeps FMA math whatever a result says (it never
  // takes a tensor-op one); bf16 runs with the math type its result was timed with.
  const FwdAlgoPerf *best = nullptr;
  for (int i = 0; i < returned && !best; ++i) {
    const FwdAlgoPerf &result = results[i];
    bool mathAccepted = shape.dtype != DType::F32 || result.mathType == kCudnnFmaMath ||
                        result.mathType == kCudnnDefaultMath;
    if (result.status == kCudnnStatusSuccess && result.algorithm >= 0 &&
        result.algorithm < kCudnnFwdAlgoCount && mathAccepted)
      best = &result;
  }
  if (!best)
    return makeError(ErrorCode::Unavailable,
                     fmt::format("cudnnFindConvolutionForwardAlgorithmEx found no algorithm for "
                                 "this convolution ({} tried)",
                                 returned));
  findWorkspace.reset();
  plan->algorithm_ = best->algorithm;
  if (shape.dtype != DType::F32) {
    plan->mathType_ = best->mathType;
    KILN_TRY_VOID(check(api.setConvolutionMathType(plan->convolution_, plan->mathType_),
                        "cudnnSetConvolutionMathType"));
  }
  size_t bytes = 0;
  KILN_TRY_VOID(check(api.getConvolutionForwardWorkspaceSize(handle_, plan->x_, plan->w_,
                                                             plan->convolution_, plan->y_,
                                                             plan->algorithm_, &bytes),
                      "cudnnGetConvolutionForwardWorkspaceSize"));
  plan->workspaceBytes_ = std::max(static_cast<int64_t>(bytes), static_cast<int64_t>(best->memory));
  if (plan->workspaceBytes_ > 0) {
    KILN_TRY(DeviceBuffer buffer, DeviceBuffer::allocate(device, plan->workspaceBytes_));
    plan->workspace_.emplace(std::move(buffer));
  }
  return plan;
}

Cudnn::Convolution::~Convolution() {
  const Api &api = *cudnn_->api_;
  if (convolution_)
    api.destroyConvolutionDescriptor(convolution_);
  if (w_)
    api.destroyFilterDescriptor(w_);
  if (y_)
    api.destroyTensorDescriptor(y_);
  if (x_)
    api.destroyTensorDescriptor(x_);
}

Expected<void> Cudnn::Convolution::forward(runtime::DevicePtr x, runtime::DevicePtr w,
                                           runtime::DevicePtr y) {
  // alpha and beta are floats for float and bfloat16 data alike.
  const float alpha = 1.0f, beta = 0.0f;
  void *workspace = workspace_ ? reinterpret_cast<void *>(workspace_->ptr()) : nullptr;
  return cudnn_->check(cudnn_->api_->convolutionForward(
                           cudnn_->handle_, &alpha, x_, reinterpret_cast<const void *>(x), w_,
                           reinterpret_cast<const void *>(w), convolution_, algorithm_,
                           workspace, static_cast<size_t>(workspaceBytes_), &beta, y_,
                           reinterpret_cast<void *>(y)),
                       fmt::format("cudnnConvolutionForward ({})", describe()));
}

std::string Cudnn::Convolution::describe() const {
  std::string workspace =
      workspaceBytes_ == 0          ? "no workspace"
      : workspaceBytes_ < (1 << 20) ? fmt::format("{:.0f} KiB workspace", workspaceBytes_ / 1024.0)
                                    : fmt::format("{:.0f} MiB workspace",
                                                  workspaceBytes_ / double(1 << 20));
  return fmt::format("{}, {}, {}", kFwdAlgoNames[algorithm_], mathTypeName(mathType_),
                     workspace);
}

bool Cudnn::Convolution::transforms() const {
  std::string_view name = kFwdAlgoNames[algorithm_];
  return name.starts_with("FFT") || name.starts_with("WINOGRAD");
}

} // namespace kiln::bench
