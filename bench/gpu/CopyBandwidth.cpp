// Section (a): the device-to-device copy bandwidth, the yardstick of every
// memory-bound kernel. Traffic counts both the bytes read and those written.
#include "bench/gpu/DeviceTimer.h"
#include "bench/gpu/KernelTiming.h"
#include "bench/gpu/Sections.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace kiln::bench {

namespace {

constexpr int64_t kMiB = int64_t(1) << 20;
constexpr int kCopyRuns = 10, kCopyRunsQuick = 3;
constexpr uint8_t kPattern = 0x5a;

/// The destination's first and last bytes must hold the pattern the source was
/// filled with: a copy that does nothing must not report a bandwidth.
Expected<std::string> checkCopied(runtime::Device &device, runtime::Stream stream,
                                  const DeviceBuffer &dst) {
  constexpr int64_t kProbe = 4096;
  std::vector<uint8_t> head(kProbe), tail(kProbe);
  KILN_TRY_VOID(device.copyToHost(head.data(), dst.ptr(), kProbe, stream));
  KILN_TRY_VOID(device.copyToHost(tail.data(), dst.ptr() + dst.bytes() - kProbe, kProbe, stream));
  KILN_TRY_VOID(device.synchronize(stream));
  for (const auto *probe : {&head, &tail})
    if (std::any_of(probe->begin(), probe->end(), [](uint8_t b) { return b != kPattern; }))
      return std::string("the destination does not hold the source's bytes");
  return std::string("ok");
}

struct CopyResult {
  double bestMs = 0, medianMs = 0;
  std::string check;
};

Expected<CopyResult> measureCopy(runtime::Device &device, int64_t bytes, int runs) {
  KILN_TRY(DeviceStream stream, DeviceStream::create(device));
  KILN_TRY(DeviceBuffer src, DeviceBuffer::allocate(device, bytes));
  KILN_TRY(DeviceBuffer dst, DeviceBuffer::allocate(device, bytes));
  KILN_TRY_VOID(device.fill(src.ptr(), kPattern, bytes, stream.get()));
  KILN_TRY_VOID(device.fill(dst.ptr(), 0, bytes, stream.get()));
  // Untimed first copy: page mappings and clocks settle.
  KILN_TRY_VOID(device.copyOnDevice(dst.ptr(), src.ptr(), bytes, stream.get()));
  KILN_TRY(std::string check, checkCopied(device, stream.get(), dst));
  std::vector<double> times;
  for (int run = 0; run < runs; ++run) {
    KILN_TRY(double ms, timeOnStream(device, stream.get(), [&] {
               return device.copyOnDevice(dst.ptr(), src.ptr(), bytes, stream.get());
             }));
    times.push_back(ms);
  }
  return CopyResult{*std::min_element(times.begin(), times.end()), median(times), check};
}

} // namespace

void benchCopyBandwidth(BenchContext &context) {
  std::vector<int64_t> sizes = context.quick ? std::vector<int64_t>{16 * kMiB, 256 * kMiB}
                                             : std::vector<int64_t>{16 * kMiB, 64 * kMiB,
                                                                    256 * kMiB, 1024 * kMiB};
  int runs = context.quick ? kCopyRunsQuick : kCopyRuns;
  Table table{.title = "(a) device-to-device copy bandwidth (Device::copyOnDevice)",
              .columns = {"size", "best ms", "median ms", "best GB/s", "median GB/s", "check"},
              .note = fmt::format("GB/s = (bytes read + bytes written) / time, 1 GB = 1e9 bytes; "
                                  "device events around each copy; best and median of {} copies "
                                  "after one untimed copy. The best GB/s at the largest size is "
                                  "the yardstick of section (b).",
                                  runs)};
  for (int64_t bytes : sizes) {
    auto result = measureCopy(*context.gpu.device, bytes, runs);
    if (!result) {
      context.report.addFailure(
          fmt::format("copy {}: {}", formatBytes(bytes), result.error().message()));
      table.rows.push_back({formatBytes(bytes), "—", "—", "—", "—", "error"});
      continue;
    }
    if (result->check != "ok") {
      context.report.addFailure(fmt::format("copy {}: {}", formatBytes(bytes), result->check));
      table.rows.push_back({formatBytes(bytes), "—", "—", "—", "—", result->check});
      continue;
    }
    double best = 2.0 * double(bytes) / (result->bestMs * 1e-3);
    double typical = 2.0 * double(bytes) / (result->medianMs * 1e-3);
    // Sizes ascend: the largest size that ran is the reference.
    context.copyBytesPerSecond = best;
    table.rows.push_back({formatBytes(bytes), fmt::format("{:.4f}", result->bestMs),
                          fmt::format("{:.4f}", result->medianMs), fmt::format("{:.0f}", best / 1e9),
                          fmt::format("{:.0f}", typical / 1e9), result->check});
  }
  context.report.addTable(std::move(table));
}

} // namespace kiln::bench
