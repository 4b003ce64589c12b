// The CUDA device on a real GPU: memory and copies, pinned memory, fills,
// events, a hand-written PTX kernel, JIT errors, launch graphs, the memory pool
// on the device, and out-of-memory errors.
#include "GpuTestDevice.h"

#include "runtime/DeviceMemoryPool.h"
#include "runtime/cuda/CudaModule.h"

#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

using namespace kiln;
using runtime::DevicePtr;
using runtime::LaunchDims;
using runtime::Stream;
using runtime::cuda::CudaDevice;
using runtime::cuda::ModuleImage;

namespace {

constexpr int kAffineCount = 1001; // odd, and not a multiple of the block size

/// y[i] = 2 * x[i] + 1 for i < kAffineCount (every kiln kernel parameter is a
/// buffer, so the count is part of the code).
std::string affinePtx() {
  return fmt::format(R"(.version 7.8
.target sm_80
.address_size 64

.visible .entry affine(
    .param .u64 affine_param_x,
    .param .u64 affine_param_y
)
{{
    .reg .pred %p<2>;
    .reg .b32 %r<5>;
    .reg .f32 %f<3>;
    .reg .b64 %rd<6>;

    ld.param.u64 %rd1, [affine_param_x];
    ld.param.u64 %rd2, [affine_param_y];
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mad.lo.s32 %r4, %r1, %r2, %r3;
    setp.ge.s32 %p1, %r4, {};
    @%p1 bra DONE;
    cvta.to.global.u64 %rd3, %rd1;
    cvta.to.global.u64 %rd4, %rd2;
    mul.wide.s32 %rd5, %r4, 4;
    add.s64 %rd3, %rd3, %rd5;
    add.s64 %rd4, %rd4, %rd5;
    ld.global.f32 %f1, [%rd3];
    fma.rn.f32 %f2, %f1, 0f40000000, 0f3F800000;
    st.global.f32 [%rd4], %f2;
DONE:
    ret;
}}
)",
                     kAffineCount);
}

LaunchDims affineDims() {
  LaunchDims dims;
  dims.block = {128, 1, 1};
  dims.grid = {(kAffineCount + 127) / 128, 1, 1};
  return dims;
}

template <typename T> T valueOf(Expected<T> result) {
  if (!result)
    FAIL(result.error().str());
  return std::move(*result);
}

void ok(Expected<void> result) {
  if (!result)
    FAIL(result.error().str());
}

std::vector<float> randomFloats(size_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> value(-4.0f, 4.0f);
  std::vector<float> values(count);
  for (float &v : values)
    v = value(rng);
  return values;
}

/// Device memory released at scope end.
struct DeviceBuffer {
  CudaDevice &device;
  DevicePtr ptr;
  DeviceBuffer(CudaDevice &d, int64_t bytes) : device(d), ptr(valueOf(d.allocate(bytes))) {}
  ~DeviceBuffer() { device.free(ptr); }
};

} // namespace

TEST_CASE("the GPU reports its properties", "[gpu][cuda]") {
  CudaDevice &device = gpuTestDevice();
  const auto &p = device.properties();
  CHECK_FALSE(p.name.empty());
  CHECK(p.ccMajor >= 8);
  CHECK(p.numSms > 0);
  CHECK(p.totalMemoryBytes > (int64_t(1) << 30));
  CHECK(p.maxThreadsPerBlock == 1024);
  CHECK(p.driverVersion >= 12040);
  CHECK_THAT(device.describe(), Catch::Contains(p.smName()) && Catch::Contains("SMs") &&
                                    Catch::Contains("GiB") && Catch::Contains("driver"));
  runtime::DevicePeak peak = device.peak();
  CHECK(peak.memoryBytesPerSecond > 0.5e12);
  CHECK(peak.f32FlopsPerSecond > 10e12);
}

TEST_CASE("copies of odd sizes round-trip through device memory", "[gpu][cuda]") {
  CudaDevice &device = gpuTestDevice();
  for (int64_t bytes : {int64_t(1), int64_t(3), int64_t(1001), int64_t(65537),
                        int64_t(3 * 1048576 + 5)}) {
    INFO("bytes = " << bytes);
    std::vector<unsigned char> input(bytes), output(bytes, 0);
    std::iota(input.begin(), input.end(), static_cast<unsigned char>(bytes));
    DeviceBuffer a(device, bytes), b(device, bytes);
    ok(device.copyToDevice(a.ptr, input.data(), bytes, Stream{}));
    ok(device.copyOnDevice(b.ptr, a.ptr, bytes, Stream{}));
    ok(device.copyToHost(output.data(), b.ptr, bytes, Stream{}));
    ok(device.synchronize(Stream{}));
    CHECK(output == input);
  }
}

TEST_CASE("pinned memory copies asynchronously on a stream", "[gpu][cuda]") {
  CudaDevice &device = gpuTestDevice();
  constexpr int64_t kBytes = 8 * 1048576 + 13;
  auto *input = static_cast<unsigned char *>(valueOf(device.allocatePinned(kBytes)));
  auto *output = static_cast<unsigned char *>(valueOf(device.allocatePinned(kBytes)));
  for (int64_t i = 0; i < kBytes; ++i)
    input[i] = static_cast<unsigned char>(i * 7 + 3);
  std::memset(output, 0, kBytes);
  Stream stream = valueOf(device.createStream());
  {
    DeviceBuffer buffer(device, kBytes);
    ok(device.copyToDevice(buffer.ptr, input, kBytes, stream));
    ok(device.copyToHost(output, buffer.ptr, kBytes, stream));
    ok(device.synchronize(stream));
    CHECK(std::memcmp(input, output, kBytes) == 0);
  }
  device.destroyStream(stream);
  device.freePinned(input);
  device.freePinned(output);
}

TEST_CASE("fill sets exactly the bytes asked for", "[gpu][cuda]") {
  CudaDevice &device = gpuTestDevice();
  constexpr int64_t kBytes = 4099;
  DeviceBuffer buffer(device, kBytes + 64);
  ok(device.fill(buffer.ptr, 0x11, kBytes + 64, Stream{}));
  ok(device.fill(buffer.ptr, 0xab, kBytes, Stream{}));
  std::vector<unsigned char> host(kBytes + 64);
  ok(device.copyToHost(host.data(), buffer.ptr, kBytes + 64, Stream{}));
  ok(device.synchronize(Stream{}));
  for (int64_t i = 0; i < kBytes + 64; ++i)
    if (host[i] != (i < kBytes ? 0xab : 0x11))
      FAIL("byte " << i << " is " << int(host[i]));
  SUCCEED();
}

TEST_CASE("events order and time work on a stream", "[gpu][cuda]") {
  CudaDevice &device = gpuTestDevice();
  Stream stream = valueOf(device.createStream());
  runtime::Event start = valueOf(device.createEvent());
  runtime::Event end = valueOf(device.createEvent());
  constexpr int64_t kBytes = 256 * 1048576;
  {
    DeviceBuffer buffer(device, kBytes);
    ok(device.record(start, stream));
    for (int i = 0; i < 8; ++i)
      ok(device.fill(buffer.ptr, static_cast<uint8_t>(i), kBytes, stream));
    ok(device.record(end, stream));
    ok(device.synchronize(stream));
  }
  CHECK(valueOf(device.eventDone(end)));
  double ms = valueOf(device.elapsedMs(start, end));
  CHECK(ms > 0);
  CHECK(ms < 10000);
  device.destroyEvent(start);
  device.destroyEvent(end);
  device.destroyStream(stream);
}

TEST_CASE("a hand-written PTX kernel loads through the JIT and computes", "[gpu][cuda]") {
  CudaDevice &device = gpuTestDevice();
  auto module = valueOf(device.loadModule(ModuleImage{affinePtx(), {}, "the affine test kernel"}));
  auto kernel = valueOf(module->kernel("affine", affineDims()));
  CHECK(kernel->name() == "affine");

  constexpr int kPadded = 1024; // elements past kAffineCount must stay poisoned
  std::vector<float> x = randomFloats(kPadded, 7);
  DeviceBuffer xs(device, kPadded * 4), ys(device, kPadded * 4);
  ok(device.copyToDevice(xs.ptr, x.data(), kPadded * 4, Stream{}));
  ok(device.fill(ys.ptr, 0xff, kPadded * 4, Stream{}));
  DevicePtr args[] = {xs.ptr, ys.ptr};
  ok(kernel->launch(args, Stream{}));
  std::vector<float> y(kPadded);
  ok(device.copyToHost(y.data(), ys.ptr, kPadded * 4, Stream{}));
  ok(device.synchronize(Stream{}));
  for (int i = 0; i < kPadded; ++i) {
    INFO("i = " << i);
    if (i < kAffineCount)
      REQUIRE(y[i] == 2 * x[i] + 1); // fma.rn of exact operands: exact
    else
      REQUIRE(std::isnan(y[i]));
  }

  SECTION("a missing kernel is NotFound") {
    auto missing = module->kernel("nope", affineDims());
    REQUIRE_FALSE(missing);
    CHECK(missing.error().code() == ErrorCode::NotFound);
    CHECK_THAT(missing.error().message(), Catch::Contains("'nope'"));
  }
  SECTION("impossible launch dimensions are InvalidArgument") {
    LaunchDims dims = affineDims();
    dims.block = {2048, 1, 1};
    auto tooWide = module->kernel("affine", dims);
    REQUIRE_FALSE(tooWide);
    CHECK(tooWide.error().code() == ErrorCode::InvalidArgument);
  }
  SECTION("a cubin the driver rejects falls back to the PTX") {
    std::string notCubin = "not a cubin";
    std::vector<std::byte> bytes(notCubin.size() + 1, std::byte{0}); // NUL-terminated
    std::memcpy(bytes.data(), notCubin.data(), notCubin.size());
    auto fallback = device.loadModule(ModuleImage{affinePtx(), bytes, "a broken cubin"});
    REQUIRE(fallback);
    CHECK(valueOf((*fallback)->kernel("affine", affineDims()))->name() == "affine");
    auto noPtx = device.loadModule(ModuleImage{"", bytes, "a broken cubin"});
    REQUIRE_FALSE(noPtx);
    CHECK(noPtx.error().code() == ErrorCode::CompileError);
  }
}

TEST_CASE("PTX with a syntax error is a CompileError carrying the JIT log", "[gpu][cuda]") {
  CudaDevice &device = gpuTestDevice();
  std::string ptx = affinePtx();
  std::string good = "fma.rn.f32 %f2, %f1,";
  ptx.replace(ptx.find(good), good.size(), "fma.rn.f32 %f2 %f1 bogus,");
  auto module = device.loadModule(ModuleImage{ptx, {}, "the broken test kernel"});
  REQUIRE_FALSE(module);
  const Error &error = module.error();
  INFO(error.str());
  CHECK(error.code() == ErrorCode::CompileError);
  CHECK_THAT(error.message(), Catch::Contains("the broken test kernel"));
  CHECK_THAT(error.message(), Catch::Contains("CUDA_ERROR_INVALID_PTX"));
  REQUIRE_FALSE(error.notes().empty());
  CHECK_THAT(error.notes()[0], Catch::StartsWith("JIT log:") && Catch::Contains("error"));
}

TEST_CASE("a launch graph of a fill, a kernel and a copy replays", "[gpu][cuda]") {
  CudaDevice &device = gpuTestDevice();
  auto module = valueOf(device.loadModule(ModuleImage{affinePtx(), {}, "the affine test kernel"}));
  auto kernel = valueOf(module->kernel("affine", affineDims()));
  constexpr int kPadded = 1024;
  DeviceBuffer xs(device, kPadded * 4), ys(device, kPadded * 4), zs(device, kPadded * 4);
  Stream stream = valueOf(device.createStream());

  ok(device.beginCapture(stream));
  ok(device.fill(ys.ptr, 0xff, kPadded * 4, stream));
  DevicePtr args[] = {xs.ptr, ys.ptr};
  ok(kernel->launch(args, stream));
  ok(device.copyOnDevice(zs.ptr, ys.ptr, kPadded * 4, stream));
  runtime::GraphExec graph = valueOf(device.endCapture(stream));

  for (unsigned replay = 0; replay < 2; ++replay) {
    INFO("replay " << replay);
    std::vector<float> x = randomFloats(kPadded, 100 + replay);
    ok(device.copyToDevice(xs.ptr, x.data(), kPadded * 4, stream));
    ok(device.fill(zs.ptr, 0, kPadded * 4, stream));
    ok(device.launchGraph(graph, stream));
    std::vector<float> z(kPadded);
    ok(device.copyToHost(z.data(), zs.ptr, kPadded * 4, stream));
    ok(device.synchronize(stream));
    for (int i = 0; i < kPadded; ++i) {
      INFO("i = " << i);
      if (i < kAffineCount)
        REQUIRE(z[i] == 2 * x[i] + 1);
      else
        REQUIRE(std::isnan(z[i]));
    }
  }
  device.destroyGraph(graph);
  device.destroyStream(stream);

  auto defaultStream = device.beginCapture(Stream{});
  REQUIRE_FALSE(defaultStream);
  CHECK(defaultStream.error().code() == ErrorCode::Unsupported);
}

TEST_CASE("another thread uses the device without setting up a context", "[gpu][cuda]") {
  CudaDevice &device = gpuTestDevice();
  std::string failure;
  std::thread worker([&] {
    std::vector<int> input(333), output(333, 0);
    std::iota(input.begin(), input.end(), 5);
    auto ptr = device.allocate(333 * 4);
    if (!ptr) {
      failure = ptr.error().str();
      return;
    }
    auto copied = device.copyToDevice(*ptr, input.data(), 333 * 4, Stream{});
    if (copied)
      copied = device.copyToHost(output.data(), *ptr, 333 * 4, Stream{});
    if (copied)
      copied = device.synchronize(Stream{});
    device.free(*ptr);
    if (!copied)
      failure = copied.error().str();
    else if (output != input)
      failure = "the copies on the worker thread lost data";
  });
  worker.join();
  INFO(failure);
  CHECK(failure.empty());
}

TEST_CASE("the memory pool reuses device blocks", "[gpu][cuda][pool]") {
  CudaDevice &device = gpuTestDevice();
  Stream first = valueOf(device.createStream());
  Stream second = valueOf(device.createStream());
  {
    runtime::DeviceMemoryPool pool(device);
    DevicePtr a = valueOf(pool.allocate(5000, first));
    CHECK(a % runtime::DeviceMemoryPool::kAlignment == 0);
    ok(device.fill(a, 1, 5000, first));
    pool.release(a, first);
    CHECK(valueOf(pool.allocate(4900, first)) == a); // same stream: at once
    pool.release(a, first);
    ok(device.synchronize(first));
    CHECK(valueOf(pool.allocate(5000, second)) == a); // the event has completed
    pool.release(a, second);
    runtime::PoolStats stats = pool.stats();
    CHECK(stats.deviceAllocations == 1);
    CHECK(stats.cacheHits == 2);
    ok(device.synchronize(second));
    pool.trim();
    CHECK(pool.stats().bytesReserved == 0);
  }
  device.destroyStream(first);
  device.destroyStream(second);
}

TEST_CASE("an absurd allocation is OutOfMemory naming the size", "[gpu][cuda]") {
  CudaDevice &device = gpuTestDevice();
  constexpr int64_t kPebibyte = int64_t(1) << 50;
  auto direct = device.allocate(kPebibyte);
  REQUIRE_FALSE(direct);
  CHECK(direct.error().code() == ErrorCode::OutOfMemory);
  CHECK_THAT(direct.error().message(), Catch::Contains("1.0 PiB") &&
                                           Catch::Contains("1125899906842624 bytes") &&
                                           Catch::Contains(" free of "));
  runtime::DeviceMemoryPool pool(device);
  auto pooled = pool.allocate(kPebibyte, Stream{});
  REQUIRE_FALSE(pooled);
  CHECK(pooled.error().code() == ErrorCode::OutOfMemory);
  CHECK_THAT(pooled.error().message(), Catch::Contains("1.0 PiB"));
  CHECK_THAT(pooled.error().notes().back(), Catch::StartsWith("pool: "));
  // The device is still usable afterwards.
  DeviceBuffer small(device, 4096);
  CHECK(small.ptr != 0);
}
