// CudnnConv2D: cuDNN's legacy convolution API behind kiln's DeviceKernel —
// descriptors from a Conv2DProblem, the algorithm chosen by measuring (or by
// cuDNN's heuristic, or replayed from a record), a trial run, and launches on
// per-stream handles and workspaces.
#include "runtime/cudnn/CudnnConv2D.h"

#include "runtime/cuda/CudaDevice.h"
#include "runtime/cudnn/CudnnApi.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <vector>

namespace kiln::runtime::cudnn {

/// The descriptors of one problem, shared (read only) by every stream's launches.
struct CudnnConvDescriptors {
  const CudnnLibrary *library = nullptr;
  cudnnTensorDescriptor_t x = nullptr, y = nullptr, bias = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnActivationDescriptor_t relu = nullptr;
  std::array<int, 4> outDims{}; ///< n, k, p, q as cuDNN computes them

  CudnnConvDescriptors() = default;
  CudnnConvDescriptors(const CudnnConvDescriptors &) = delete;
  CudnnConvDescriptors &operator=(const CudnnConvDescriptors &) = delete;
  ~CudnnConvDescriptors() {
    if (!library)
      return;
    const CudnnApi &api = *library->api;
    if (x)
      api.cudnnDestroyTensorDescriptor(x);
    if (y)
      api.cudnnDestroyTensorDescriptor(y);
    if (bias)
      api.cudnnDestroyTensorDescriptor(bias);
    if (w)
      api.cudnnDestroyFilterDescriptor(w);
    if (conv)
      api.cudnnDestroyConvolutionDescriptor(conv);
    if (relu)
      api.cudnnDestroyActivationDescriptor(relu);
  }
};

/// A stream's own handle (cuDNN handles are not safe to share between threads
/// that enqueue at once) and workspace.
struct CudnnConv2D::StreamState {
  cudnnHandle_t handle = nullptr;
  DevicePtr workspace = 0;
  std::mutex mutex; ///< one enqueue at a time on the handle
};

namespace {

struct AlgorithmName {
  cudnnConvolutionFwdAlgo_t algorithm;
  const char *name;
};
constexpr AlgorithmName kAlgorithms[] = {
    {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, "implicit_gemm"},
    {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, "implicit_precomp_gemm"},
    {CUDNN_CONVOLUTION_FWD_ALGO_GEMM, "gemm"},
    {CUDNN_CONVOLUTION_FWD_ALGO_DIRECT, "direct"},
    {CUDNN_CONVOLUTION_FWD_ALGO_FFT, "fft"},
    {CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING, "fft_tiling"},
    {CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD, "winograd"},
    {CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED, "winograd_nonfused"},
};

struct MathName {
  cudnnMathType_t math;
  const char *name;
};
constexpr MathName kMathTypes[] = {
    {CUDNN_DEFAULT_MATH, "default"},
    {CUDNN_TENSOR_OP_MATH, "tensor_op"},
    {CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION, "tensor_op_allow_conversion"},
    {CUDNN_FMA_MATH, "fma"},
};

std::string algorithmName(int algorithm) {
  for (const AlgorithmName &entry : kAlgorithms)
    if (entry.algorithm == algorithm)
      return entry.name;
  return fmt::format("algo{}", algorithm);
}

std::string mathName(int math) {
  for (const MathName &entry : kMathTypes)
    if (entry.math == math)
      return entry.name;
  return fmt::format("math{}", math);
}

bool isFft(int algorithm) {
  return algorithm == CUDNN_CONVOLUTION_FWD_ALGO_FFT ||
         algorithm == CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING;
}

const char *layoutName(ConvLayout layout) { return layout == ConvLayout::Nhwc ? "nhwc" : "nchw"; }

Expected<cudnnDataType_t> dataTypeFor(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return CUDNN_DATA_FLOAT;
  case DType::F16:
    return CUDNN_DATA_HALF;
  case DType::BF16:
    return CUDNN_DATA_BFLOAT16;
  case DType::F64:
    return CUDNN_DATA_DOUBLE;
  default:
    return makeError(ErrorCode::Unsupported,
                     fmt::format("cuDNN conv2d: dtype {} is not supported (f32, f16, bf16, f64)",
                                 dtypeName(dtype)));
  }
}

/// The math type kiln's precision allows: f32 without allow_tf32 must not
/// round its inputs to tf32, which cuDNN's default math does on Ampere and newer.
cudnnMathType_t initialMathType(const Conv2DProblem &problem) {
  switch (problem.dtype) {
  case DType::F32:
    return problem.allowTf32 ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH;
  case DType::F16:
  case DType::BF16:
    return CUDNN_TENSOR_OP_MATH;
  default:
    return CUDNN_DEFAULT_MATH;
  }
}

std::array<int64_t, 4> xShape(const Conv2DProblem &p) {
  return p.layout == ConvLayout::Nhwc
             ? std::array<int64_t, 4>{p.batch, p.height, p.width, p.inChannels}
             : std::array<int64_t, 4>{p.batch, p.inChannels, p.height, p.width};
}

std::array<int64_t, 4> wShape(const Conv2DProblem &p) {
  int64_t perGroup = p.groups > 0 ? p.inChannels / p.groups : p.inChannels;
  return p.layout == ConvLayout::Nhwc
             ? std::array<int64_t, 4>{p.outChannels, p.kernelH, p.kernelW, perGroup}
             : std::array<int64_t, 4>{p.outChannels, perGroup, p.kernelH, p.kernelW};
}

std::array<int64_t, 4> yShape(const Conv2DProblem &p) {
  return p.layout == ConvLayout::Nhwc
             ? std::array<int64_t, 4>{p.batch, p.outHeight, p.outWidth, p.outChannels}
             : std::array<int64_t, 4>{p.batch, p.outChannels, p.outHeight, p.outWidth};
}

int64_t elements(const std::array<int64_t, 4> &shape) {
  return shape[0] * shape[1] * shape[2] * shape[3];
}

/// cuDNN's 4-d descriptors take int sizes and strides.
Expected<void> checkFitsInt(const Conv2DProblem &p) {
  const int64_t values[] = {p.batch,       p.inChannels, p.height,     p.width,
                            p.outChannels, p.kernelH,    p.kernelW,    p.stride[0],
                            p.stride[1],   p.padding[0], p.padding[1], p.dilation[0],
                            p.dilation[1], p.groups,     p.outHeight,  p.outWidth};
  for (int64_t value : values)
    if (value < 0 || value > INT_MAX)
      return makeError(
          ErrorCode::Unsupported,
          fmt::format("cuDNN conv2d: {} has a size or attribute outside int range", p.str()));
  if (p.groups < 1 || p.inChannels % p.groups != 0 || p.outChannels % p.groups != 0)
    return makeError(
        ErrorCode::InvalidArgument,
        fmt::format("cuDNN conv2d: {}: groups must divide both channel counts", p.str()));
  for (const auto &shape : {xShape(p), wShape(p), yShape(p)})
    if (elements(shape) > INT_MAX)
      return makeError(ErrorCode::Unsupported,
                       fmt::format("cuDNN conv2d: {} has a tensor of more than 2^31 elements, "
                                   "beyond cuDNN's 4-d descriptors",
                                   p.str()));
  return {};
}

/// Every tensor has an argument slot within `count`; the output shares none.
Expected<void> checkArguments(const Conv2DProblem &p) {
  const Conv2DArguments &a = p.args;
  auto inRange = [&](int index) { return index >= 0 && index < a.count; };
  bool ok = inRange(a.x) && inRange(a.w) && inRange(a.output) &&
            (p.bias ? inRange(a.bias) && a.bias != a.output : a.bias == -1) && a.output != a.x &&
            a.output != a.w;
  if (!ok)
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("cuDNN conv2d {}: argument positions x={} w={} bias={} output={} "
                                 "do not fit {} arguments (each within range, the output apart "
                                 "from the inputs, bias -1 exactly when there is none)",
                                 p.str(), a.x, a.w, a.bias, a.output, a.count));
  return {};
}

Expected<std::unique_ptr<CudnnConvDescriptors>> describe(const CudnnLibrary &library,
                                                         const Conv2DProblem &p) {
  KILN_TRY_VOID(checkFitsInt(p));
  KILN_TRY(cudnnDataType_t type, dataTypeFor(p.dtype));
  cudnnDataType_t computeType = p.dtype == DType::F64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  cudnnTensorFormat_t format = p.layout == ConvLayout::Nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  const CudnnApi &api = *library.api;
  auto d = std::make_unique<CudnnConvDescriptors>();
  d->library = &library;
  auto check = [&](cudnnStatus_t status, const char *what) {
    return checkCudnn(library, status, fmt::format("{} for {}", what, p.str()));
  };
  auto i = [](int64_t value) { return static_cast<int>(value); };

  KILN_TRY_VOID(check(api.cudnnCreateTensorDescriptor(&d->x), "cudnnCreateTensorDescriptor"));
  KILN_TRY_VOID(check(api.cudnnSetTensor4dDescriptor(d->x, format, type, i(p.batch),
                                                     i(p.inChannels), i(p.height), i(p.width)),
                      "cudnnSetTensor4dDescriptor(x)"));
  KILN_TRY_VOID(check(api.cudnnCreateFilterDescriptor(&d->w), "cudnnCreateFilterDescriptor"));
  KILN_TRY_VOID(
      check(api.cudnnSetFilter4dDescriptor(d->w, type, format, i(p.outChannels),
                                           i(p.inChannels / p.groups), i(p.kernelH), i(p.kernelW)),
            "cudnnSetFilter4dDescriptor(w)"));
  KILN_TRY_VOID(
      check(api.cudnnCreateConvolutionDescriptor(&d->conv), "cudnnCreateConvolutionDescriptor"));
  KILN_TRY_VOID(check(api.cudnnSetConvolution2dDescriptor(
                          d->conv, i(p.padding[0]), i(p.padding[1]), i(p.stride[0]), i(p.stride[1]),
                          i(p.dilation[0]), i(p.dilation[1]), CUDNN_CROSS_CORRELATION, computeType),
                      "cudnnSetConvolution2dDescriptor"));
  KILN_TRY_VOID(check(api.cudnnSetConvolutionGroupCount(d->conv, i(p.groups)),
                      "cudnnSetConvolutionGroupCount"));
  KILN_TRY_VOID(check(api.cudnnSetConvolutionMathType(d->conv, initialMathType(p)),
                      "cudnnSetConvolutionMathType"));
  auto &o = d->outDims;
  KILN_TRY_VOID(check(
      api.cudnnGetConvolution2dForwardOutputDim(d->conv, d->x, d->w, &o[0], &o[1], &o[2], &o[3]),
      "cudnnGetConvolution2dForwardOutputDim"));
  KILN_TRY_VOID(check(api.cudnnCreateTensorDescriptor(&d->y), "cudnnCreateTensorDescriptor"));
  KILN_TRY_VOID(check(api.cudnnSetTensor4dDescriptor(d->y, format, type, o[0], o[1], o[2], o[3]),
                      "cudnnSetTensor4dDescriptor(y)"));
  if (p.bias) {
    // [1,K,1,1] in y's format: K contiguous values either way, broadcast over n, h, w.
    KILN_TRY_VOID(check(api.cudnnCreateTensorDescriptor(&d->bias), "cudnnCreateTensorDescriptor"));
    KILN_TRY_VOID(
        check(api.cudnnSetTensor4dDescriptor(d->bias, format, type, 1, i(p.outChannels), 1, 1),
              "cudnnSetTensor4dDescriptor(bias)"));
  }
  if (p.relu) {
    KILN_TRY_VOID(
        check(api.cudnnCreateActivationDescriptor(&d->relu), "cudnnCreateActivationDescriptor"));
    // kiln's relu propagates NaN.
    KILN_TRY_VOID(check(
        api.cudnnSetActivationDescriptor(d->relu, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0),
        "cudnnSetActivationDescriptor(relu)"));
  }
  return d;
}

std::array<int64_t, 4> inLayoutOrder(const Conv2DProblem &p, const std::array<int, 4> &nkpq) {
  return p.layout == ConvLayout::Nhwc ? std::array<int64_t, 4>{nkpq[0], nkpq[2], nkpq[3], nkpq[1]}
                                      : std::array<int64_t, 4>{nkpq[0], nkpq[1], nkpq[2], nkpq[3]};
}

/// Device memory for the construction's measurements, freed at scope end.
class ScratchBuffers {
public:
  explicit ScratchBuffers(cuda::CudaDevice &device) : device_(device) {}
  ~ScratchBuffers() {
    for (DevicePtr ptr : owned_)
      device_.free(ptr);
  }
  ScratchBuffers(const ScratchBuffers &) = delete;
  ScratchBuffers &operator=(const ScratchBuffers &) = delete;

  /// Filled with 0x3c bytes: small finite values in every float dtype.
  Expected<DevicePtr> tensor(int64_t bytes) {
    KILN_TRY(DevicePtr ptr, device_.allocate(std::max<int64_t>(bytes, 1)));
    owned_.push_back(ptr);
    KILN_TRY_VOID(device_.fill(ptr, 0x3c, bytes, Stream{}));
    return ptr;
  }
  /// Workspace of up to `bytes`, halving on out-of-memory; 0 bytes at worst.
  std::pair<DevicePtr, int64_t> workspace(int64_t bytes) {
    for (; bytes > 0; bytes /= 2)
      if (auto ptr = device_.allocate(bytes)) {
        owned_.push_back(*ptr);
        return {*ptr, bytes};
      }
    return {0, 0};
  }

private:
  cuda::CudaDevice &device_;
  std::vector<DevicePtr> owned_;
};

void *address(DevicePtr ptr) { return reinterpret_cast<void *>(static_cast<uintptr_t>(ptr)); }

} // namespace

std::string Conv2DProblem::str() const {
  auto shape = [](const std::array<int64_t, 4> &s) {
    return fmt::format("[{},{},{},{}]", s[0], s[1], s[2], s[3]);
  };
  return fmt::format("conv2d {} {}{} x{} w{} stride=[{},{}] pad=[{},{}] dilation=[{},{}] "
                     "groups={}{}{}",
                     layoutName(layout), dtypeName(dtype), allowTf32 ? " tf32" : "",
                     shape(xShape(*this)), shape(wShape(*this)), stride[0], stride[1], padding[0],
                     padding[1], dilation[0], dilation[1], groups, bias ? " +bias" : "",
                     relu ? " +relu" : "");
}

bool transformsOperands(const CudnnConvChoice &choice) {
  return isFft(choice.algorithm) ||
         choice.algorithm == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD ||
         choice.algorithm == CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
}

std::string cudnnChoiceText(const CudnnConvChoice &choice) {
  return fmt::format("algo={} math={} epilogue={}", algorithmName(choice.algorithm),
                     mathName(choice.mathType), choice.fusedEpilogue ? "fused" : "separate");
}

Expected<CudnnConvChoice> parseCudnnChoice(const std::string &text) {
  CudnnConvChoice choice;
  bool haveAlgorithm = false, haveMath = false, haveEpilogue = false;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(' ', start);
    std::string field = text.substr(start, end == std::string::npos ? end : end - start);
    start = end == std::string::npos ? text.size() : end + 1;
    size_t equals = field.find('=');
    std::string key = field.substr(0, equals);
    std::string value = equals == std::string::npos ? "" : field.substr(equals + 1);
    if (key == "algo") {
      for (const AlgorithmName &entry : kAlgorithms)
        if (value == entry.name) {
          choice.algorithm = entry.algorithm;
          haveAlgorithm = true;
        }
      if (!haveAlgorithm)
        return makeError(
            ErrorCode::InvalidArgument,
            fmt::format("cuDNN configuration '{}': unknown algorithm '{}'", text, value));
    } else if (key == "math") {
      for (const MathName &entry : kMathTypes)
        if (value == entry.name) {
          choice.mathType = entry.math;
          haveMath = true;
        }
      if (!haveMath)
        return makeError(
            ErrorCode::InvalidArgument,
            fmt::format("cuDNN configuration '{}': unknown math type '{}'", text, value));
    } else if (key == "epilogue") {
      if (value != "fused" && value != "separate")
        return makeError(ErrorCode::InvalidArgument,
                         fmt::format("cuDNN configuration '{}': epilogue must be 'fused' or "
                                     "'separate', got '{}'",
                                     text, value));
      choice.fusedEpilogue = value == "fused";
      haveEpilogue = true;
    }
  }
  if (!haveAlgorithm || !haveMath || !haveEpilogue)
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("cuDNN configuration '{}' lacks {}", text,
                                 !haveAlgorithm ? "algo="
                                 : !haveMath    ? "math="
                                                : "epilogue="));
  return choice;
}

Expected<std::array<int64_t, 4>> cudnnConv2DOutputShape(const Conv2DProblem &problem) {
  KILN_TRY(const CudnnLibrary *library, cudnnLibrary());
  KILN_TRY(auto descriptors, describe(*library, problem));
  return inLayoutOrder(problem, descriptors->outDims);
}

CudnnConv2D::CudnnConv2D(std::shared_ptr<cuda::CudaDevice> device, const CudnnLibrary &library,
                         const Conv2DProblem &problem, std::string name)
    : device_(std::move(device)), library_(library), problem_(problem), name_(std::move(name)) {}

CudnnConv2D::~CudnnConv2D() {
  bool current = static_cast<bool>(device_->makeCurrent());
  for (auto &[stream, state] : streams_) {
    if (current && state->handle)
      library_.api->cudnnDestroy(state->handle);
    device_->free(state->workspace);
  }
}

Expected<CudnnConv2D::StreamState *> CudnnConv2D::stateFor(Stream stream) const {
  std::lock_guard lock(streamsMutex_);
  auto found = streams_.find(stream.handle);
  if (found != streams_.end())
    return found->second.get();
  auto state = std::make_unique<StreamState>();
  auto created = [&]() -> Expected<void> {
    KILN_TRY_VOID(device_->makeCurrent());
    KILN_TRY_VOID(checkCudnn(library_, library_.api->cudnnCreate(&state->handle), "cudnnCreate"));
    KILN_TRY_VOID(checkCudnn(
        library_,
        library_.api->cudnnSetStream(state->handle, static_cast<cudaStream_t>(stream.handle)),
        "cudnnSetStream"));
    if (workspaceBytes_ > 0) {
      KILN_TRY(state->workspace, device_->allocate(workspaceBytes_));
    }
    return {};
  }();
  if (!created) {
    if (state->handle)
      library_.api->cudnnDestroy(state->handle);
    Error error = std::move(created).error();
    error.withNote(
        fmt::format("while creating the cuDNN handle and workspace of '{}' for a stream; "
                    "when the stream is being captured into a launch graph, call "
                    "prepare(stream) before the capture",
                    name_));
    return std::unexpected(std::move(error));
  }
  return streams_.emplace(stream.handle, std::move(state)).first->second.get();
}

Expected<void> CudnnConv2D::prepare(Stream stream) const {
  KILN_TRY_VOID(stateFor(stream));
  return {};
}

Expected<void> CudnnConv2D::enqueue(const StreamState &state, const DevicePtr *args) const {
  const CudnnApi &api = *library_.api;
  const CudnnConvDescriptors &d = *descriptors_;
  const Conv2DArguments &a = problem_.args;
  // Scaling factors are double for double tensors, float otherwise.
  const float oneF = 1.0f, zeroF = 0.0f;
  const double oneD = 1.0, zeroD = 0.0;
  bool isDouble = problem_.dtype == DType::F64;
  const void *one = isDouble ? static_cast<const void *>(&oneD) : &oneF;
  const void *zero = isDouble ? static_cast<const void *>(&zeroD) : &zeroF;
  void *x = address(args[a.x]), *w = address(args[a.w]), *y = address(args[a.output]);
  void *bias = problem_.bias ? address(args[a.bias]) : nullptr;
  void *workspace = address(state.workspace);
  size_t workspaceBytes = static_cast<size_t>(state.workspace ? workspaceBytes_ : 0);
  auto algorithm = static_cast<cudnnConvolutionFwdAlgo_t>(choice_.algorithm);
  auto check = [&](cudnnStatus_t status, const char *operation) {
    return checkCudnn(library_, status,
                      fmt::format("{} of '{}' ({})", operation, name_, problem_.str()));
  };

  if (choice_.fusedEpilogue)
    // y = relu(conv(x, w) + 0 * z + bias), with y itself as the (ignored) z.
    return check(api.cudnnConvolutionBiasActivationForward(
                     state.handle, one, d.x, x, d.w, w, d.conv, algorithm, workspace,
                     workspaceBytes, zero, d.y, y, d.bias, bias, d.relu, d.y, y),
                 "cudnnConvolutionBiasActivationForward");
  KILN_TRY_VOID(
      check(api.cudnnConvolutionForward(state.handle, one, d.x, x, d.w, w, d.conv, algorithm,
                                        workspace, workspaceBytes, zero, d.y, y),
            "cudnnConvolutionForward"));
  if (problem_.bias)
    KILN_TRY_VOID(
        check(api.cudnnAddTensor(state.handle, one, d.bias, bias, one, d.y, y), "cudnnAddTensor"));
  if (problem_.relu)
    KILN_TRY_VOID(check(api.cudnnActivationForward(state.handle, d.relu, one, d.y, y, zero, d.y, y),
                        "cudnnActivationForward"));
  return {};
}

Expected<void> CudnnConv2D::launch(const DevicePtr *args, Stream stream) const {
  KILN_TRY(StreamState * state, stateFor(stream));
  KILN_TRY_VOID(device_->makeCurrent());
  Expected<void> enqueued = [&] {
    std::lock_guard lock(state->mutex);
    return enqueue(*state, args);
  }();
  if (!enqueued) {
    Error error = std::move(enqueued).error();
    if (error.code() == ErrorCode::Unavailable)
      error = device_->withLastKernel(std::move(error), stream);
    return std::unexpected(std::move(error));
  }
  device_->noteLaunch(stream, name_);
  return {};
}

namespace {

/// The algorithms kiln lets cuDNN choose from, as (algorithm, math type)
/// pairs ranked by cuDNN: measured times (Find) or its heuristic's order.
std::vector<cudnnConvolutionFwdAlgoPerf_t>
usableResults(const cudnnConvolutionFwdAlgoPerf_t *results, int count,
              const CudnnConvOptions &options, int64_t workspaceLimit) {
  std::vector<cudnnConvolutionFwdAlgoPerf_t> usable;
  for (int i = 0; i < count; ++i) {
    const cudnnConvolutionFwdAlgoPerf_t &result = results[i];
    if (result.status != CUDNN_STATUS_SUCCESS)
      continue;
    if (isFft(result.algo) && !options.allowFft)
      continue;
    if (static_cast<int64_t>(result.memory) > workspaceLimit)
      continue;
    usable.push_back(result);
  }
  return usable;
}

} // namespace

Expected<std::shared_ptr<CudnnConv2D>> CudnnConv2D::create(const Conv2DProblem &problem,
                                                           cuda::CudaDevice &device,
                                                           const CudnnConvOptions &options) {
  KILN_TRY_VOID(checkArguments(problem));
  KILN_TRY(const CudnnLibrary *library, cudnnLibrary());
  const CudnnApi &api = *library->api;
  std::shared_ptr<CudnnConv2D> kernel(
      new CudnnConv2D(device.shared_from_this(), *library, problem, options.name));
  KILN_TRY(kernel->descriptors_, describe(*library, problem));
  const CudnnConvDescriptors &d = *kernel->descriptors_;
  std::array<int64_t, 4> cudnnShape = inLayoutOrder(problem, d.outDims);
  if (cudnnShape != yShape(problem))
    return makeError(ErrorCode::InvalidArgument,
                     fmt::format("cuDNN computes output [{},{},{},{}] for {}, the problem says "
                                 "[{},{},{},{}]",
                                 cudnnShape[0], cudnnShape[1], cudnnShape[2], cudnnShape[3],
                                 problem.str(), yShape(problem)[0], yShape(problem)[1],
                                 yShape(problem)[2], yShape(problem)[3]));
  auto check = [&](cudnnStatus_t status, const char *operation) {
    return checkCudnn(*library, status, fmt::format("{} for {}", operation, problem.str()));
  };

  // The default stream's state serves the measurements, then the launches on it.
  KILN_TRY(StreamState * state, kernel->stateFor(Stream{}));
  KILN_TRY_VOID(device.makeCurrent());
  int64_t elementBytes = dtypeByteSize(problem.dtype);
  ScratchBuffers scratch(device);
  KILN_TRY(DevicePtr x, scratch.tensor(elements(xShape(problem)) * elementBytes));
  KILN_TRY(DevicePtr w, scratch.tensor(elements(wShape(problem)) * elementBytes));
  KILN_TRY(DevicePtr y, scratch.tensor(elements(yShape(problem)) * elementBytes));
  DevicePtr bias = 0;
  if (problem.bias) {
    KILN_TRY(bias, scratch.tensor(problem.outChannels * elementBytes));
  }

  CudnnConvChoice choice;
  if (options.fixed) {
    choice = *options.fixed;
    if (choice.fusedEpilogue && !(problem.bias && problem.relu))
      return makeError(ErrorCode::InvalidArgument,
                       fmt::format("cuDNN configuration '{}' fuses an epilogue, but {} has no "
                                   "bias and relu",
                                   cudnnChoiceText(choice), problem.str()));
  } else {
    int maxCount = 0;
    KILN_TRY_VOID(check(api.cudnnGetConvolutionForwardAlgorithmMaxCount(state->handle, &maxCount),
                        "cudnnGetConvolutionForwardAlgorithmMaxCount"));
    std::vector<cudnnConvolutionFwdAlgoPerf_t> results(static_cast<size_t>(std::max(maxCount, 1)));
    int returned = 0;
    int64_t workspaceLimit = options.workspaceLimitBytes;
    if (options.selection == CudnnSelection::Measured) {
      // Find gets one workspace for all: as large as the hungriest allowed
      // algorithm wants, within the limit and what the device can spare.
      int64_t wanted = 0;
      for (const AlgorithmName &entry : kAlgorithms) {
        size_t bytes = 0;
        if (isFft(entry.algorithm) && !options.allowFft)
          continue;
        if (api.cudnnGetConvolutionForwardWorkspaceSize(state->handle, d.x, d.w, d.conv, d.y,
                                                        entry.algorithm,
                                                        &bytes) == CUDNN_STATUS_SUCCESS)
          wanted = std::max(wanted, static_cast<int64_t>(bytes));
      }
      auto [findWorkspace, findBytes] =
          scratch.workspace(std::min(wanted, options.workspaceLimitBytes));
      workspaceLimit = findBytes;
      KILN_TRY_VOID(check(api.cudnnFindConvolutionForwardAlgorithmEx(
                              state->handle, d.x, address(x), d.w, address(w), d.conv, d.y,
                              address(y), maxCount, &returned, results.data(),
                              address(findWorkspace), static_cast<size_t>(findBytes)),
                          "cudnnFindConvolutionForwardAlgorithmEx"));
    } else {
      KILN_TRY_VOID(
          check(api.cudnnGetConvolutionForwardAlgorithm_v7(state->handle, d.x, d.w, d.conv, d.y,
                                                           maxCount, &returned, results.data()),
                "cudnnGetConvolutionForwardAlgorithm_v7"));
    }
    std::vector<cudnnConvolutionFwdAlgoPerf_t> usable =
        usableResults(results.data(), returned, options, workspaceLimit);
    if (usable.empty())
      return makeError(ErrorCode::Unsupported,
                       fmt::format("cuDNN has no usable algorithm for {} on {} ({} of {} "
                                   "algorithms reported; FFT {}; workspace limit {} bytes)",
                                   problem.str(), device.describe(), returned, maxCount,
                                   options.allowFft ? "allowed" : "excluded", workspaceLimit));
    choice.algorithm = usable.front().algo;
    choice.mathType = usable.front().mathType;
    choice.fusedEpilogue = problem.bias && problem.relu;
  }
  // f32 without allow_tf32 keeps fp32 products whatever the ranking reported.
  if (problem.dtype == DType::F32 && !problem.allowTf32)
    choice.mathType = CUDNN_FMA_MATH;
  KILN_TRY_VOID(
      check(api.cudnnSetConvolutionMathType(d.conv, static_cast<cudnnMathType_t>(choice.mathType)),
            "cudnnSetConvolutionMathType"));
  size_t workspaceBytes = 0;
  KILN_TRY_VOID(
      check(api.cudnnGetConvolutionForwardWorkspaceSize(
                state->handle, d.x, d.w, d.conv, d.y,
                static_cast<cudnnConvolutionFwdAlgo_t>(choice.algorithm), &workspaceBytes),
            "cudnnGetConvolutionForwardWorkspaceSize"));
  kernel->choice_ = choice;
  kernel->workspaceBytes_ = static_cast<int64_t>(workspaceBytes);
  if (workspaceBytes > 0) {
    KILN_TRY(state->workspace, device.allocate(kernel->workspaceBytes_));
  }

  // A trial run: what cuDNN rejects only when asked to run (the fused
  // epilogue with some algorithms) fails here, and the fused path falls back.
  std::vector<DevicePtr> args(static_cast<size_t>(problem.args.count), x);
  args[problem.args.x] = x;
  args[problem.args.w] = w;
  args[problem.args.output] = y;
  if (problem.bias)
    args[problem.args.bias] = bias;
  auto trial = [&]() -> Expected<void> {
    KILN_TRY_VOID(kernel->enqueue(*state, args.data()));
    return device.synchronize(Stream{});
  };
  Expected<void> ran = trial();
  if (!ran && kernel->choice_.fusedEpilogue && !options.fixed &&
      ran.error().code() != ErrorCode::Unavailable) {
    // cuDNN restricts the fused call by algorithm and data type in ways it
    // reports as NOT_SUPPORTED or BAD_PARAM: the separate calls compute the same.
    std::string fusedFailure = ran.error().message();
    kernel->choice_.fusedEpilogue = false;
    ran = trial();
    if (!ran)
      ran.error().withNote("the fused bias+relu call failed first: " + fusedFailure);
  }
  KILN_TRY_VOID(std::move(ran));
  kernel->configText_ =
      fmt::format("{} workspace={}", cudnnChoiceText(kernel->choice_), kernel->workspaceBytes_);
  return kernel;
}

} // namespace kiln::runtime::cudnn
