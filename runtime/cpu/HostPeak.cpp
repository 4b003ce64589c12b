// The host's fp32 peak from its figures and clock, and a short copy stream
// that measures its memory bandwidth.
#include "runtime/cpu/HostPeak.h"

#include "runtime/cpu/ThreadPool.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <memory>
#include <new>
#include <sstream>
#include <string>

namespace kiln::cpu {

namespace {

double readSysfsMaxClockHz() {
  std::ifstream in("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq");
  double kiloHertz = 0;
  if (in >> kiloHertz && kiloHertz > 0)
    return kiloHertz * 1e3;
  return 0;
}

double readCpuinfoClockHz() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  double bestMegaHertz = 0;
  while (std::getline(in, line)) {
    if (!line.starts_with("cpu MHz"))
      continue;
    size_t colon = line.find(':');
    if (colon == std::string::npos)
      continue;
    std::istringstream value(line.substr(colon + 1));
    double megaHertz = 0;
    if (value >> megaHertz)
      bestMegaHertz = std::max(bestMegaHertz, megaHertz);
  }
  return bestMegaHertz * 1e6;
}

} // namespace

double hostPeakF32Flops(const HostComputeFigures &figures) {
  int pipes = figures.hasFma ? kFmaUnitsPerCore : 1;
  return static_cast<double>(figures.cores) * figures.f32Lanes * pipes * 2 * figures.clockHz;
}

double hostMaxClockHz() {
  if (double sysfs = readSysfsMaxClockHz(); sysfs > 0)
    return sysfs;
  return readCpuinfoClockHz();
}

double measureHostMemoryBandwidth(int64_t bufferBytes, double seconds) {
  using Clock = std::chrono::steady_clock;
  size_t bytes = static_cast<size_t>(std::max<int64_t>(bufferBytes, 1 << 20));
  std::unique_ptr<char[]> source(new (std::nothrow) char[bytes]);
  std::unique_ptr<char[]> destination(new (std::nothrow) char[bytes]);
  if (!source || !destination)
    return 0;
  ThreadPool &pool = ThreadPool::global();
  int64_t chunks = pool.numThreads();
  size_t chunkBytes = (bytes + static_cast<size_t>(chunks) - 1) / static_cast<size_t>(chunks);
  auto copyPass = [&](int fill) {
    pool.parallelFor(chunks, [&](int64_t begin, int64_t end) {
      for (int64_t chunk = begin; chunk < end; ++chunk) {
        size_t offset = static_cast<size_t>(chunk) * chunkBytes;
        if (offset >= bytes)
          continue;
        size_t size = std::min(chunkBytes, bytes - offset);
        if (fill >= 0) {
          // First touch on the thread that copies later, so pages are mapped
          // (and placed) before the timed passes.
          std::memset(source.get() + offset, fill, size);
          std::memset(destination.get() + offset, 0, size);
        } else {
          std::memcpy(destination.get() + offset, source.get() + offset, size);
        }
      }
    });
  };
  copyPass(1);
  double bestSeconds = 0;
  auto deadline = Clock::now() + std::chrono::duration<double>(seconds);
  do {
    auto start = Clock::now();
    copyPass(-1);
    double pass = std::chrono::duration<double>(Clock::now() - start).count();
    if (bestSeconds == 0 || pass < bestSeconds)
      bestSeconds = pass;
  } while (Clock::now() < deadline);
  return bestSeconds > 0 ? 2.0 * static_cast<double>(bytes) / bestSeconds : 0;
}

runtime::DevicePeak hostDevicePeak(const HostComputeFigures &figures,
                                   double memoryBytesPerSecond) {
  return {memoryBytesPerSecond, hostPeakF32Flops(figures)};
}

} // namespace kiln::cpu
