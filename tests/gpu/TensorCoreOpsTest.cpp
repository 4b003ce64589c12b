// Tensor-core statements on a real GPU, through both GPU backends (LLVM NVPTX
// and CUDA C with NVRTC): each Mma kind against an fp64 product of its
// operands, LdMatrix against the ldmatrix layout, and cp.async round trips
// through shared memory (zero fill included), the latter two bit for bit, and on sm_90a each
// wgmma orientation against an fp64 product, and a producer warpgroup's bulk tensor copies
// feeding a consumer's wgmma through mbarriers. The kernels are the ones tests/codegen checks
// through ptxas (TensorCoreKernels.h). A wrong warpgroup product prints which operand elements
// it read (tests/ProductProbe.h), so one GPU run shows the misreading.
#include "GpuTestDevice.h"

#include "codegen/Ptx.h"
#include "codegen/cuda/CudaSource.h"
#include "codegen/cuda/Nvrtc.h"
#include "ir/kernel/GpuLaunch.h"
#include "runtime/cuda/CudaModule.h"
#include "support/FloatConvert.h"
#include "support/HostTensor.h"
#include "tests/codegen/gpu/TensorCoreKernels.h"
#include "tests/codegen/gpu/TmaKernels.h"
#include "tests/ProductProbe.h"
#include "compiler/GpuCompile.h"

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

using namespace kiln;
using kir::MatrixPosition;
using kir::MmaKind;
using kir::MmaOperand;
using runtime::DevicePtr;
using runtime::Stream;
using runtime::cuda::CudaDevice;

namespace {

template <typename T> T valueOf(Expected<T> result) {
  if (!result)
    FAIL(result.error().str());
  return std::move(*result);
}

void ok(Expected<void> result) {
  if (!result)
    FAIL(result.error().str());
}

int computeCapability(const CudaDevice &device) {
  return device.properties().ccMajor * 10 + device.properties().ccMinor;
}

/// The target kiln compiles for on this GPU: its own architecture where kiln
/// names it, else the newest one kiln names that the GPU runs.
codegen::GpuTarget deviceTarget(const CudaDevice &device) {
  if (auto exact = codegen::gpuTargetNamed(device.properties().smName()))
    return *exact;
  int cc = computeCapability(device);
  return valueOf(codegen::gpuTargetNamed(cc >= 90 ? "sm_90" : cc >= 89 ? "sm_89" : "sm_80"));
}

/// Device memory released at scope end, filled from and read back to host vectors.
struct DeviceBuffer {
  CudaDevice &device;
  int64_t bytes;
  DevicePtr ptr;
  DeviceBuffer(CudaDevice &d, int64_t size) : device(d), bytes(size), ptr(valueOf(d.allocate(size))) {}
  ~DeviceBuffer() { device.free(ptr); }
  template <typename T> void upload(const std::vector<T> &host) {
    REQUIRE(static_cast<int64_t>(host.size() * sizeof(T)) == bytes);
    ok(device.copyToDevice(ptr, host.data(), bytes, Stream{}));
  }
  void poison() { ok(device.fill(ptr, 0xff, bytes, Stream{})); }
  template <typename T> std::vector<T> download() {
    std::vector<T> host(static_cast<size_t>(bytes) / sizeof(T));
    ok(device.copyToHost(host.data(), ptr, bytes, Stream{}));
    ok(device.synchronize(Stream{}));
    return host;
  }
};

/// A kernel compiled by one backend and loaded for a launch of one warp.
struct LoadedKernel {
  std::string backend;
  std::shared_ptr<const runtime::DeviceKernel> kernel;
};

/// `kernel` through both backends, each loaded on the device; NVRTC is
/// skipped with a warning where it cannot be loaded.
std::vector<LoadedKernel> loadBoth(CudaDevice &device, const kir::Kernel &kernel,
                                   runtime::LaunchDims oneWarp = {{1, 1, 1}, {32, 1, 1}, 0}) {
  codegen::GpuTarget target = deviceTarget(device);
  std::vector<LoadedKernel> loaded;
  std::string ptx = valueOf(codegen::compilePtxWithLlvm(std::span(&kernel, 1), target));
  auto llvmModule = valueOf(device.loadModule(
      runtime::cuda::ModuleImage{ptx, {}, fmt::format("{} (llvm, {})", kernel.name, target.archName())}));
  loaded.push_back({"llvm", valueOf(llvmModule->kernel(kernel.name, oneWarp))});

  std::string source = valueOf(codegen::cuda::emitCudaSource(std::span(&kernel, 1), target));
  auto nvrtc = codegen::cuda::compileWithNvrtc(source, kernel.name + ".cu", target);
  if (!nvrtc && nvrtc.error().code() == ErrorCode::Unavailable) {
    WARN("NVRTC unavailable: " << kernel.name << " runs through LLVM only: " << nvrtc.error().str());
    return loaded;
  }
  codegen::cuda::NvrtcOutput output = valueOf(std::move(nvrtc));
  auto nvrtcModule = valueOf(device.loadModule(runtime::cuda::ModuleImage{
      output.ptx, output.cubin, fmt::format("{} (nvrtc, {})", kernel.name, target.archName())}));
  loaded.push_back({"nvrtc", valueOf(nvrtcModule->kernel(kernel.name, oneWarp))});
  return loaded;
}

void launch(const LoadedKernel &loaded, std::vector<DevicePtr> args) {
  ok(loaded.kernel->launch(args.data(), Stream{}));
}

/// f32 rounded to tf32 (10 mantissa bits) to nearest, ties away from zero,
/// as cvt.rna.tf32.f32 does for the finite values used here.
float roundToTf32(float value) {
  uint32_t bits = std::bit_cast<uint32_t>(value);
  bits = (bits + 0x1000u) & ~0x1fffu; // the magnitude rounds half up: away from zero
  return std::bit_cast<float>(bits);
}

/// `count` values k/4 with k in [-8, 8): every product and sum of a few thousand of them is
/// exact in f32, and each is exact in bf16, f16 and e4m3.
std::vector<double> quarters(int64_t count, std::mt19937 &rng) {
  std::uniform_int_distribution<int> quarter(-8, 7);
  std::vector<double> values(static_cast<size_t>(count));
  for (double &v : values)
    v = quarter(rng) / 4.0;
  return values;
}

/// `values` (each exact in `dtype`) as the bytes a device buffer of `dtype` holds.
std::vector<uint8_t> encoded(DType dtype, const std::vector<double> &values) {
  HostTensor t(dtype, {int64_t(values.size())});
  for (size_t i = 0; i < values.size(); ++i)
    t.setDouble(int64_t(i), values[i]);
  return std::vector<uint8_t>(t.bytes().begin(), t.bytes().end());
}

/// Matrix operands of one dtype: the bytes a fragment buffer holds and the
/// exact value the product uses.
struct Operand {
  DType dtype;
  std::vector<std::byte> bytes; ///< fragment order
  std::vector<double> matrix;   ///< row-major, as the mma reads it
};

/// A rows x cols matrix of random values representable in `dtype` (f32 for
/// tf32, whose product sees them rounded to tf32), laid out in `operand`'s
/// fragment order for `kind`.
Operand randomOperand(MmaKind kind, MmaOperand operand, int rows, int cols, int perLane,
                      DType dtype, std::mt19937 &rng) {
  std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
  const int elementBytes = static_cast<int>(dtypeByteSize(dtype));
  std::vector<std::byte> stored(static_cast<size_t>(rows * cols * elementBytes));
  Operand result{dtype, std::vector<std::byte>(static_cast<size_t>(32 * perLane * elementBytes)),
                 std::vector<double>(static_cast<size_t>(rows * cols))};
  for (int i = 0; i < rows * cols; ++i) {
    float value = uniform(rng);
    // e4m3 operands (and C) on a grid of 1/4: exact in e4m3, and every partial
    // sum is exact in the f8 path's shorter accumulator.
    if (kind == MmaKind::E4M3_M16N8K32)
      value = std::round(value * 4.0f) / 4.0f;
    std::byte *at = stored.data() + i * elementBytes;
    double exact = value;
    if (dtype == DType::F16) {
      uint16_t bits = floatToHalfBits(value);
      std::memcpy(at, &bits, 2);
      exact = halfBitsToFloat(bits);
    } else if (dtype == DType::BF16) {
      uint16_t bits = floatToBFloat16Bits(value);
      std::memcpy(at, &bits, 2);
      exact = bfloat16BitsToFloat(bits);
    } else if (dtype == DType::F8E4M3) {
      uint8_t bits = floatToF8E4M3Bits(value);
      std::memcpy(at, &bits, 1);
      exact = f8e4m3BitsToFloat(bits);
    } else {
      std::memcpy(at, &value, 4);
      exact = kind == MmaKind::TF32_M16N8K8 && operand != MmaOperand::C ? roundToTf32(value) : value;
    }
    result.matrix[static_cast<size_t>(i)] = exact;
  }
  for (int lane = 0; lane < 32; ++lane)
    for (int e = 0; e < perLane; ++e) {
      MatrixPosition p = kir::mmaFragmentPosition(kind, operand, lane, e);
      std::memcpy(result.bytes.data() + (lane * perLane + e) * elementBytes,
                  stored.data() + (p.row * cols + p.col) * elementBytes, elementBytes);
    }
  return result;
}

/// The error allowed in an mma's result, as a fraction of the sum of the
/// magnitudes of its terms (|c| + the |a b|, each product exact in f32). The
/// tensor cores add in f32 but not with IEEE rounding at every step: a few
/// units of 2^-24 per addition for 16-bit and tf32 operands. Their f8 path
/// keeps fewer accumulator bits (about 14 on Hopper), hence e4m3's margin
/// (its test values make every sum exact, so it should see no error at all).
/// An operand in the wrong place errs by about the values' own size.
double relativeTolerance(MmaKind kind) { return kind == MmaKind::E4M3_M16N8K32 ? 2e-3 : 1e-5; }

} // namespace

TEST_CASE("mma of every kind matches an fp64 product on the GPU", "[gpu][tensor-core]") {
  CudaDevice &device = gpuTestDevice();
  for (MmaKind kind : {MmaKind::F16_M16N8K16, MmaKind::BF16_M16N8K16, MmaKind::TF32_M16N8K8,
                       MmaKind::E4M3_M16N8K32}) {
    const kir::MmaShapeInfo &info = kir::mmaShapeInfo(kind);
    INFO(kir::mmaKindName(kind));
    if (computeCapability(device) < info.minSm) {
      WARN("skipped " << kir::mmaKindName(kind) << ": it needs sm_" << info.minSm << ", the GPU is "
                      << device.properties().smName());
      continue;
    }
    const int m = info.m, n = info.n, k = info.k;
    std::mt19937 rng(1234 + static_cast<unsigned>(kind));
    Operand a = randomOperand(kind, MmaOperand::A, m, k, info.aElements, info.operandDtype, rng);
    Operand b = randomOperand(kind, MmaOperand::B, k, n, info.bElements, info.operandDtype, rng);
    Operand c = randomOperand(kind, MmaOperand::C, m, n, info.cElements, DType::F32, rng);

    // The fp64 product and, per element, the scale of its rounding error:
    // products are exact in f32, so the error is the f32 accumulation's.
    std::vector<double> expected(m * n), scale(m * n);
    for (int i = 0; i < m; ++i)
      for (int j = 0; j < n; ++j) {
        double sum = c.matrix[i * n + j], magnitude = std::abs(sum);
        for (int p = 0; p < k; ++p) {
          double product = a.matrix[i * k + p] * b.matrix[p * n + j];
          sum += product;
          magnitude += std::abs(product);
        }
        expected[i * n + j] = sum;
        scale[i * n + j] = magnitude;
      }

    kir::Kernel kernel = testing::mmaKernel(kind);
    DeviceBuffer aFrag(device, static_cast<int64_t>(a.bytes.size()));
    DeviceBuffer bFrag(device, static_cast<int64_t>(b.bytes.size()));
    DeviceBuffer cFrag(device, static_cast<int64_t>(c.bytes.size()));
    DeviceBuffer dFrag(device, 32 * info.cElements * 4);
    aFrag.upload(a.bytes);
    bFrag.upload(b.bytes);
    cFrag.upload(c.bytes);
    for (const LoadedKernel &loaded : loadBoth(device, kernel)) {
      INFO("backend " << loaded.backend);
      dFrag.poison(); // NaN: an element the kernel does not write fails
      launch(loaded, {aFrag.ptr, bFrag.ptr, cFrag.ptr, dFrag.ptr});
      std::vector<float> d = dFrag.download<float>();
      std::vector<int> written(m * n, 0);
      int mismatches = 0;
      double worst = 0; // the largest error, relative to its element's scale
      for (int lane = 0; lane < 32; ++lane)
        for (int e = 0; e < info.cElements; ++e) {
          MatrixPosition p = kir::mmaFragmentPosition(kind, MmaOperand::C, lane, e);
          int at = p.row * n + p.col;
          ++written[at];
          double got = d[lane * info.cElements + e];
          double error = std::abs(got - expected[at]);
          double tolerance = relativeTolerance(kind) * scale[at];
          worst = std::max(worst, error / scale[at]);
          if (!(error <= tolerance) && ++mismatches <= 8)
            FAIL_CHECK("D[" << p.row << "][" << p.col << "] (lane " << lane << ", element " << e
                            << ") is " << got << ", expected " << expected[at] << " +- "
                            << tolerance);
        }
      CHECK(mismatches == 0);
      CHECK(std::count(written.begin(), written.end(), 1) == m * n); // each element once
      WARN("mma." << kir::mmaKindName(kind) << " (" << loaded.backend << "): worst error "
                  << worst << " of the terms' magnitude, allowed " << relativeTolerance(kind));
    }
  }
}

TEST_CASE("ldmatrix loads 1, 2 and 4 matrices, plain and transposed, on the GPU", "[gpu][tensor-core]") {
  CudaDevice &device = gpuTestDevice();
  for (int matrices : {1, 2, 4}) {
    for (bool transpose : {false, true}) {
      INFO("x" << matrices << (transpose ? ".trans" : ""));
      const int64_t size = testing::ldMatrixSourceSize(matrices);
      const int perLane = 2 * matrices;
      // Distinct finite f16 bit patterns, so any misplaced element shows.
      std::vector<uint16_t> source(static_cast<size_t>(size));
      for (int64_t i = 0; i < size; ++i)
        source[static_cast<size_t>(i)] = static_cast<uint16_t>(0x3c00 + i);
      DeviceBuffer sourceBuffer(device, size * 2), out(device, 32 * perLane * 2);
      sourceBuffer.upload(source);
      for (const LoadedKernel &loaded : loadBoth(device, testing::ldMatrixKernel(matrices, transpose))) {
        INFO("backend " << loaded.backend);
        out.poison();
        launch(loaded, {sourceBuffer.ptr, out.ptr});
        std::vector<uint16_t> got = out.download<uint16_t>();
        int mismatches = 0;
        for (int lane = 0; lane < 32; ++lane)
          for (int e = 0; e < perLane; ++e) {
            MatrixPosition p = kir::ldMatrixPosition(transpose, lane, e);
            int matrix = e / 2;
            uint16_t expected =
                source[static_cast<size_t>((8 * matrix + p.row) * testing::ldMatrixRowStride(DType::F16) +
                                           p.col)];
            if (got[lane * perLane + e] != expected && ++mismatches <= 8)
              FAIL_CHECK("lane " << lane << " element " << e << " is 0x" << std::hex
                                 << got[lane * perLane + e] << ", expected 0x" << expected
                                 << std::dec << " (matrix " << matrix << " row " << p.row
                                 << " column " << p.col << ")");
          }
        CHECK(mismatches == 0);
      }
    }
  }
}

TEST_CASE("ldmatrix of 8-bit elements delivers byte quads on the GPU", "[gpu][tensor-core]") {
  CudaDevice &device = gpuTestDevice();
  for (int matrices : {1, 2, 4}) {
    INFO("x" << matrices << " e4m3");
    const int64_t size = testing::ldMatrixSourceSize(matrices, DType::F8E4M3);
    const int perLane = 4 * matrices;
    std::vector<uint8_t> source(static_cast<size_t>(size));
    for (int64_t i = 0; i < size; ++i)
      source[static_cast<size_t>(i)] = static_cast<uint8_t>(i * 7 + 1); // distinct per row
    DeviceBuffer sourceBuffer(device, size), out(device, 32 * perLane);
    sourceBuffer.upload(source);
    for (const LoadedKernel &loaded :
         loadBoth(device, testing::ldMatrixKernel(matrices, false, DType::F8E4M3))) {
      INFO("backend " << loaded.backend);
      out.poison();
      launch(loaded, {sourceBuffer.ptr, out.ptr});
      std::vector<uint8_t> got = out.download<uint8_t>();
      int mismatches = 0;
      for (int lane = 0; lane < 32; ++lane)
        for (int e = 0; e < perLane; ++e) {
          kir::LdMatrixElement at = kir::ldMatrixElement(1, false, lane, e);
          uint8_t expected = source[static_cast<size_t>(
              (8 * at.matrix + at.position.row) * testing::ldMatrixRowStride(DType::F8E4M3) +
              at.position.col)];
          if (got[static_cast<size_t>(lane * perLane + e)] != expected && ++mismatches <= 8)
            FAIL_CHECK("lane " << lane << " element " << e << " is "
                               << int(got[static_cast<size_t>(lane * perLane + e)])
                               << ", expected " << int(expected));
        }
      CHECK(mismatches == 0);
    }
  }
}

TEST_CASE("cp.async round-trips through shared memory and zero-fills on the GPU", "[gpu][tensor-core]") {
  CudaDevice &device = gpuTestDevice();
  for (int lanes : {1, 2, 4}) {
    for (bool predicated : {false, true}) {
      INFO(4 * lanes << " bytes" << (predicated ? ", predicated" : ""));
      const int size = 64 * lanes;
      std::mt19937 rng(99 + lanes);
      std::uniform_real_distribution<float> uniform(1.0f, 2.0f); // never 0 or the sentinel
      std::vector<float> source(size);
      for (float &value : source)
        value = uniform(rng);
      DeviceBuffer sourceBuffer(device, size * 4), out(device, size * 4);
      sourceBuffer.upload(source);
      for (const LoadedKernel &loaded : loadBoth(device, testing::asyncCopyKernel(lanes, predicated))) {
        INFO("backend " << loaded.backend);
        out.poison();
        launch(loaded, {sourceBuffer.ptr, out.ptr});
        std::vector<float> got = out.download<float>();
        int mismatches = 0;
        for (int i = 0; i < size; ++i) {
          int copier = (i / lanes) % 32; // the lane that copied this chunk
          float expected = predicated && !testing::asyncCopyLaneCopies(copier) ? 0.0f : source[i];
          if (std::bit_cast<uint32_t>(got[i]) != std::bit_cast<uint32_t>(expected) &&
              ++mismatches <= 8)
            FAIL_CHECK("element " << i << " (copied by lane " << copier << ") is " << got[i]
                                  << ", expected " << expected);
        }
        CHECK(mismatches == 0);
      }
    }
  }
}

TEST_CASE("wgmma of both orientations matches an fp64 product on the GPU", "[gpu][tensor-core][wgmma]") {
  CudaDevice &device = gpuTestDevice();
  codegen::GpuTarget target = deviceTarget(device);
  if (target.sm != 90 || !target.archSpecific) {
    WARN("skipped: wgmma runs only on sm_90a; the GPU is " << device.properties().smName());
    return;
  }
  using kir::WgmmaKind;
  struct Case {
    WgmmaKind kind;
    int n;
    bool aMnMajor, bMnMajor;
  };
  for (Case c : {Case{WgmmaKind::BF16_K16, 64, false, false}, {WgmmaKind::BF16_K16, 128, false, true},
                 {WgmmaKind::BF16_K16, 256, true, true}, {WgmmaKind::F16_K16, 64, true, false},
                 {WgmmaKind::E4M3_K32, 24, false, false}, {WgmmaKind::E4M3_K32, 256, false, false}}) {
    testing::WgmmaKernelSpec spec{c.kind, c.n, c.aMnMajor, c.bMnMajor};
    kir::Kernel kernel = testing::wgmmaKernel(spec);
    INFO(kernel.name);
    const int k = kir::wgmmaShapeInfo(c.kind).k, n = c.n;
    DType dtype = kir::wgmmaShapeInfo(c.kind).operandDtype;
    // Small dyadic values (k/4 in [-2, 2)): every product and sum is exact in f32.
    std::mt19937 rng(99 + n);
    std::vector<double> aValues = quarters(64 * k, rng), bValues = quarters(int64_t(n) * k, rng);
    DeviceBuffer a(device, int64_t(64) * k * dtypeByteSize(dtype));
    DeviceBuffer b(device, int64_t(n) * k * dtypeByteSize(dtype));
    DeviceBuffer d(device, int64_t(64) * n * 4);
    std::vector<int64_t> aIndex = testing::wgmmaTileIndices(c.kind, c.aMnMajor, 64);
    std::vector<int64_t> bIndex = testing::wgmmaTileIndices(c.kind, c.bMnMajor, n);
    std::vector<int64_t> dIndex = testing::wgmmaAccumulatorIndices(n);
    DeviceBuffer aAt(device, int64_t(aIndex.size()) * 8), bAt(device, int64_t(bIndex.size()) * 8),
        dAt(device, int64_t(dIndex.size()) * 8);
    aAt.upload(aIndex);
    bAt.upload(bIndex);
    dAt.upload(dIndex);
    kir::GpuLaunch shape = valueOf(kir::gpuLaunchOf(kernel));
    runtime::LaunchDims dims{{1, 1, 1}, {128, 1, 1}, uint32_t(shape.dynamicSharedBytes())};
    for (const LoadedKernel &loaded : loadBoth(device, kernel, dims)) {
      INFO("backend " << loaded.backend);
      testing::ProductRun run = [&](const std::vector<double> &av, const std::vector<double> &bv) {
        a.upload(encoded(dtype, av));
        b.upload(encoded(dtype, bv));
        d.poison();
        launch(loaded, {a.ptr, b.ptr, d.ptr, aAt.ptr, bAt.ptr, dAt.ptr});
        std::vector<float> got = d.download<float>();
        return std::vector<double>(got.begin(), got.end());
      };
      std::vector<double> got = run(aValues, bValues);
      int mismatches = 0;
      for (int i = 0; i < 64; ++i)
        for (int j = 0; j < n; ++j) {
          double want = 0;
          for (int p = 0; p < k; ++p)
            want += aValues[size_t(i * k + p)] * bValues[size_t(j * k + p)];
          if (got[size_t(i * n + j)] != want && ++mismatches <= 8)
            FAIL_CHECK("D[" << i << "][" << j << "] is " << got[size_t(i * n + j)] << ", expected "
                            << want);
        }
      CHECK(mismatches == 0);
      if (mismatches > 0) {
        // Which elements the product read, with their shared-memory bytes by the layout
        // kiln assumes: the pattern names the misreading without another GPU run.
        auto where = [&](char operand, int64_t e) {
          const std::vector<int64_t> &at = operand == 'A' ? aIndex : bIndex;
          return fmt::format("shared byte {:#x}", at[size_t(e)] * dtypeByteSize(dtype));
        };
        FAIL_CHECK(testing::describeProductReads(
            testing::probeProductReads({64, n, k, 64}, run), where));
      }
    }
  }
}

TEST_CASE("a producer warpgroup's bulk tensor copies feed wgmma on the GPU",
          "[gpu][tensor-core][tma][wgmma]") {
  CudaDevice &device = gpuTestDevice();
  codegen::GpuTarget target = deviceTarget(device);
  if (target.sm != 90 || !target.archSpecific) {
    WARN("skipped: the warp-specialized kernel runs wgmma, which runs only on sm_90a; the GPU "
         "is " << device.properties().smName());
    return;
  }
  struct Case {
    int n, stages, kTiles;
    int64_t m;
  };
  // Round, wide and odd N; more K tiles than stages; rows of A past the tensor read as zeros.
  for (Case c : {Case{64, 2, 5, 64}, {256, 3, 7, 64}, {136, 2, 3, 37}}) {
    testing::TmaKernelSpec spec;
    spec.n = c.n;
    spec.stages = c.stages;
    spec.kTiles = c.kTiles;
    spec.m = c.m;
    kir::Kernel kernel = testing::tmaPipelineKernel(spec);
    INFO(kernel.name << " m " << c.m);
    const int64_t k = 64 * c.kTiles, n = c.n;
    std::mt19937 rng(7 + n);
    std::vector<double> aValues = quarters(c.m * k, rng), bValues = quarters(n * k, rng);
    DeviceBuffer a(device, c.m * k * 2), b(device, n * k * 2), d(device, 64 * n * 4);
    runtime::LaunchDims dims = valueOf(compiler::launchDimsOf(kernel));
    REQUIRE(dims.tensorMaps.size() == 2);
    for (const LoadedKernel &loaded : loadBoth(device, kernel, dims)) {
      INFO("backend " << loaded.backend);
      testing::ProductRun run = [&](const std::vector<double> &av, const std::vector<double> &bv) {
        a.upload(encoded(DType::BF16, av));
        b.upload(encoded(DType::BF16, bv));
        d.poison();
        launch(loaded, {a.ptr, b.ptr, d.ptr});
        std::vector<float> got = d.download<float>();
        return std::vector<double>(got.begin(), got.end());
      };
      std::vector<double> got = run(aValues, bValues);
      int mismatches = 0;
      for (int64_t i = 0; i < 64; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double want = 0;
          for (int64_t p = 0; p < k && i < c.m; ++p)
            want += aValues[size_t(i * k + p)] * bValues[size_t(j * k + p)];
          if (got[size_t(i * n + j)] != want && ++mismatches <= 8)
            FAIL_CHECK("D[" << i << "][" << j << "] is " << got[size_t(i * n + j)]
                            << ", expected " << want);
        }
      CHECK(mismatches == 0);
      if (mismatches > 0) // which elements the boxes and the products delivered
        FAIL_CHECK(testing::describeProductReads(testing::probeProductReads({c.m, n, k, 64}, run)));
    }
  }
}
