// kiln_cpu_bench: kiln's side of the CPU benchmarks (matmul, conv2d on the
// CNN's and VGG's layer shapes, the MLP and the CNN end to end), plus compile
// time and planned memory of every example model. One JSON object per line on
// stdout; bench/run_cpu_bench.sh joins them with bench/torch_cpu.py's.
#include "bench/FusedSchedules.h"
#include "bench/JsonLines.h"
#include "bench/TimedRuns.h"
#include "compiler/Compile.h"
#include "examples/models/ExampleRegistry.h"
#include "frontend/Graph.h"
#include "frontend/Ops.h"
#include "ir/graph/Interpreter.h"
#include "runtime/cpu/ThreadPool.h"
#include "support/Tolerance.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace kiln;
using kiln::bench::jsonString;
using kiln::bench::printLine;
using kiln::bench::schedulesInDump;

// The timing method, shared with torch_cpu.py (see bench/README.md).
constexpr bench::TimingBudget kBudget{
    .warmupRuns = 3, .minRuns = 10, .minSeconds = 0.5, .maxSeconds = 10.0, .minRunsWhenSlow = 3};

constexpr int64_t kMatmulSizes[] = {256, 1024, 2048};

struct ConvShape {
  const char *name;
  int64_t batch, inChannels, outChannels, imageSize, pad;
};
// The CNN's three convs (valid padding, batch 64) and the first conv of each
// VGG16 block (same padding, batch 1), NCHW as the models use.
constexpr ConvShape kConvShapes[] = {
    {"conv_cnn1", 64, 1, 32, 28, 0},      {"conv_cnn2", 64, 32, 64, 13, 0},
    {"conv_cnn3", 64, 64, 64, 5, 0},      {"conv_vgg1_1", 1, 3, 64, 224, 1},
    {"conv_vgg2_1", 1, 64, 128, 112, 1},  {"conv_vgg3_1", 1, 128, 256, 56, 1},
    {"conv_vgg4_1", 1, 256, 512, 28, 1},  {"conv_vgg5_1", 1, 512, 512, 14, 1},
};

void printError(std::string_view workload, const Error &error) {
  printLine(fmt::format(R"({{"kind": "error", "impl": "kiln", "workload": {}, "message": {}}})",
                        jsonString(workload), jsonString(error.message())));
}

void printTime(std::string_view workload, std::vector<double> seconds, double flops,
               std::string_view check, std::string_view schedules) {
  double median = bench::sortedMedian(seconds);
  printLine(fmt::format(R"({{"kind": "time", "impl": "kiln", "workload": {}, "median_ms": {:.6f}, )"
                        R"("min_ms": {:.6f}, "runs": {}, "flops": {:.0f}, "check": {}, )"
                        R"("schedules": {}}})",
                        jsonString(workload), median * 1e3, seconds.front() * 1e3,
                        seconds.size(), flops, jsonString(check), jsonString(schedules)));
}

NamedTensors randomInputs(const ir::Graph &graph, Rng &rng) {
  NamedTensors inputs;
  for (const ir::Value *input : graph.inputs())
    inputs.emplace(input->name(),
                   HostTensor::randomNormal(input->type().dtype, input->type().shape, rng));
  return inputs;
}

/// Checks the outputs of the last timed run against its inputs: "ok", or what
/// is wrong. A benchmark of a kernel that computes the wrong thing is no
/// benchmark.
using OutputCheck = std::function<std::string(const NamedTensors &inputs, const NamedTensors &outputs)>;

struct Measured {
  std::vector<double> seconds;
  std::string check;
  std::string schedules; ///< the kernels' schedules, "; "-separated
};

/// Compiles `graph`, binds `params`, times run() on random inputs and checks
/// the last outputs. The output tensors are allocated by every run, as
/// PyTorch allocates its results.
Expected<Measured> compileAndTime(Graph &graph, const NamedTensors &params,
                                  const OutputCheck &check) {
  KILN_TRY_VOID(graph.finalize());
  std::ostringstream dump;
  CompileOptions options;
  options.dump = kDumpFused;
  options.dumpStream = &dump;
  KILN_TRY(CompiledModel model, compile(graph.ir(), options));
  if (!params.empty())
    KILN_TRY_VOID(model.bindParams(params));
  Rng rng(1);
  NamedTensors inputs = randomInputs(graph.ir(), rng);
  NamedTensors outputs;
  KILN_TRY(std::vector<double> seconds, bench::timeRuns(kBudget, [&]() -> Expected<void> {
             KILN_TRY(outputs, model.run(inputs));
             return {};
           }));
  return Measured{std::move(seconds), check(inputs, outputs), schedulesInDump(dump.str())};
}

void benchWorkload(std::string_view name, double flops, const std::function<void(Graph &)> &build,
                   const OutputCheck &check, const NamedTensors &params = {}) {
  Graph graph{std::string(name)};
  build(graph);
  auto measured = compileAndTime(graph, params, check);
  if (!measured)
    return printError(name, measured.error());
  printTime(name, std::move(measured->seconds), flops, measured->check, measured->schedules);
}

/// Compares sampled elements with fp64 sums computed here. The bound is
/// relative to the sum of |products| of each element: fp32 accumulation in any
/// order stays well inside 1e-5 of it for these sizes.
class SampledCheck {
public:
  void expect(int64_t index, double expected, double absSum) {
    samples_.push_back({index, expected, absSum});
  }
  std::string verdict(const HostTensor &actual) const {
    for (const Sample &sample : samples_) {
      double got = actual.getDouble(sample.index);
      if (!(std::abs(got - sample.expected) <= 1e-5 * sample.absSum + 1e-6))
        return fmt::format("mismatch at flat index {}: got {}, expected {}", sample.index, got,
                           sample.expected);
    }
    return "ok";
  }

private:
  struct Sample {
    int64_t index;
    double expected, absSum;
  };
  std::vector<Sample> samples_;
};

constexpr int kSamples = 256;

std::string checkMatmul(int64_t n, const NamedTensors &inputs, const NamedTensors &outputs) {
  auto a = inputs.at("a").as<float>(), b = inputs.at("b").as<float>();
  Rng rng(7);
  SampledCheck check;
  for (int s = 0; s < kSamples; ++s) {
    int64_t i = static_cast<int64_t>(rng.nextU64() % n), j = static_cast<int64_t>(rng.nextU64() % n);
    if (s == 0)
      i = j = n - 1; // the last row and column: edge tiles
    double sum = 0, absSum = 0;
    for (int64_t k = 0; k < n; ++k) {
      double product = double(a[i * n + k]) * double(b[k * n + j]);
      sum += product;
      absSum += std::abs(product);
    }
    check.expect(i * n + j, sum, absSum);
  }
  return check.verdict(outputs.at("c"));
}

std::string checkConv(const ConvShape &s, const NamedTensors &inputs,
                      const NamedTensors &outputs) {
  auto x = inputs.at("x").as<float>(), w = inputs.at("w").as<float>();
  int64_t size = s.imageSize, out = size + 2 * s.pad - 2;
  int64_t c = s.inChannels;
  Rng rng(7);
  SampledCheck check;
  for (int sample = 0; sample < kSamples; ++sample) {
    auto pick = [&](int64_t bound) { return static_cast<int64_t>(rng.nextU64() % bound); };
    int64_t n = pick(s.batch), o = pick(s.outChannels), y = pick(out), xo = pick(out);
    if (sample == 0) // the last element: edge tiles and the padded corner
      n = s.batch - 1, o = s.outChannels - 1, y = xo = out - 1;
    double sum = 0, absSum = 0;
    for (int64_t ci = 0; ci < c; ++ci)
      for (int64_t ky = 0; ky < 3; ++ky)
        for (int64_t kx = 0; kx < 3; ++kx) {
          int64_t iy = y + ky - s.pad, ix = xo + kx - s.pad;
          if (iy < 0 || iy >= size || ix < 0 || ix >= size)
            continue;
          double product = double(x[((n * c + ci) * size + iy) * size + ix]) *
                           double(w[((o * c + ci) * 3 + ky) * 3 + kx]);
          sum += product;
          absSum += std::abs(product);
        }
    check.expect(((n * s.outChannels + o) * out + y) * out + xo, sum, absSum);
  }
  return check.verdict(outputs.at("y"));
}

void benchMatmul(const std::function<bool(std::string_view)> &selected) {
  for (int64_t n : kMatmulSizes) {
    std::string name = fmt::format("matmul_{}", n);
    if (!selected(name))
      continue;
    benchWorkload(
        name, 2.0 * n * n * n,
        [n](Graph &g) {
          Tensor a = g.input("a", {n, n});
          Tensor b = g.input("b", {n, n});
          g.output("c", matmul(a, b));
        },
        [n](const NamedTensors &inputs, const NamedTensors &outputs) {
          return checkMatmul(n, inputs, outputs);
        });
  }
}

void benchConv(const std::function<bool(std::string_view)> &selected) {
  for (const ConvShape &s : kConvShapes) {
    if (!selected(s.name))
      continue;
    int64_t out = s.imageSize + 2 * s.pad - 2;
    double flops = 2.0 * s.batch * s.outChannels * out * out * s.inChannels * 9;
    benchWorkload(
        s.name, flops,
        [&s](Graph &g) {
          Tensor x = g.input("x", {s.batch, s.inChannels, s.imageSize, s.imageSize});
          // The filter is an input, as in torch_cpu.py's F.conv2d: neither side
          // may prepack it at compile time.
          Tensor w = g.input("w", {s.outChannels, s.inChannels, 3, 3});
          Conv2DOptions options;
          options.padding = Padding::symmetric(s.pad, s.pad);
          g.output("y", conv2d(x, w, options));
        },
        [&s](const NamedTensors &inputs, const NamedTensors &outputs) {
          return checkConv(s, inputs, outputs);
        });
  }
}

void benchModels(const std::function<bool(std::string_view)> &selected) {
  for (const char *modelName : {"mlp", "cnn"}) {
    const examples::ExampleModel *model = examples::findExampleModel(modelName);
    for (int64_t batch : {1, 64}) {
      std::string name = fmt::format("{}_b{}", modelName, batch);
      if (!selected(name))
        continue;
      Graph graph{name};
      model->build(graph, batch);
      // Against the fp64 reference interpreter, as `kiln run --check` does.
      auto check = [&graph](const NamedTensors &inputs, const NamedTensors &outputs) {
        NamedTensors all = inputs;
        for (const auto &[paramName, value] : graph.paramValues())
          all.insert_or_assign(paramName, value);
        auto expected = ir::interpret(graph.ir(), all);
        if (!expected)
          return fmt::format("reference failed: {}", expected.error().message());
        for (const auto &[outputName, want] : *expected) {
          Comparison comparison =
              compareTensors(outputs.at(outputName), want, toleranceFor(want.dtype()));
          if (!comparison.ok)
            return fmt::format("mismatch in {}: {}", outputName, comparison.firstMismatchStr);
        }
        return std::string("ok");
      };
      // The parameters are bound once, as PyTorch's module holds its weights.
      auto measured = compileAndTime(graph, graph.paramValues(), check);
      if (!measured) {
        printError(name, measured.error());
        continue;
      }
      printTime(name, std::move(measured->seconds), 0, measured->check, measured->schedules);
    }
  }
}

/// Compile time by stage and planned memory of every example at its default
/// batch (VGG: batch 1, 224x224), and of the MLP and CNN at batch 1 and 64.
/// Compiles only: nothing runs.
void benchCompile(const std::function<bool(std::string_view)> &selected) {
  for (const examples::ExampleModel &model : examples::exampleModels()) {
    std::vector<int64_t> batches = {model.defaultBatch};
    if (model.name == "mlp" || model.name == "cnn")
      batches = {1, 64};
    for (int64_t batch : batches) {
      std::string name = fmt::format("{}_b{}", model.name, batch);
      if (!selected(name))
        continue;
      Graph graph(name);
      model.build(graph, batch);
      if (auto ok = graph.finalize(); !ok) {
        printError("compile " + name, ok.error());
        continue;
      }
      CompileReport report;
      auto compiled = compile(graph.ir(), {}, &report);
      if (!compiled) {
        printError("compile " + name, compiled.error());
        continue;
      }
      MemoryStats memory = compiled->memoryStats();
      int64_t paramBytes = 0;
      for (const auto &[paramName, value] : graph.paramValues())
        paramBytes += value.byteSize();
      printLine(fmt::format(
          R"({{"kind": "compile", "impl": "kiln", "model": {}, "batch": {}, "groups": {}, )"
          R"("kernels": {}, "graph_s": {:.6f}, "lowering_s": {:.6f}, "codegen_s": {:.6f}, )"
          R"("total_s": {:.6f}, "arena_bytes": {}, "unplanned_bytes": {}, "constant_bytes": {}, )"
          R"("param_bytes": {}}})",
          jsonString(model.name), batch, report.numGroups, report.numKernels,
          report.graphPassSeconds, report.loweringSeconds, report.codegenSeconds,
          report.totalSeconds, memory.arenaBytes, memory.unplannedBytes, memory.constantBytes,
          paramBytes));
    }
  }
}

constexpr const char *kUsage = R"(usage: kiln_cpu_bench [--filter TEXT | --only NAME] [--sections LIST] [--list]

Times kiln on the CPU workloads of bench/README.md and prints one JSON object
per line. KILN_NUM_THREADS sets the thread count (default: all cores).
  --filter TEXT    only workloads (and compiled models) whose name contains TEXT
  --only NAME      only the workload (or compiled model) called NAME
  --list           print the names of the timed workloads, one a line, and exit
  --sections LIST  comma-separated subset of matmul,conv,models,compile
                   (default: all)
)";

} // namespace

int main(int argc, char **argv) {
  std::string filter, only;
  std::string sections = "matmul,conv,models,compile";
  bool list = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if ((arg == "--filter" || arg == "--only" || arg == "--sections") && i + 1 < argc) {
      (arg == "--filter" ? filter : arg == "--only" ? only : sections) = argv[++i];
    } else if (arg == "--list") {
      list = true;
    } else {
      std::fputs(kUsage, arg == "--help" ? stdout : stderr);
      return arg == "--help" ? 0 : 2;
    }
  }
  if (list) {
    for (int64_t n : kMatmulSizes)
      fmt::print("matmul_{}\n", n);
    for (const ConvShape &s : kConvShapes)
      fmt::print("{}\n", s.name);
    for (const char *model : {"mlp", "cnn"})
      for (int batch : {1, 64})
        fmt::print("{}_b{}\n", model, batch);
    return 0;
  }
  auto selected = [&](std::string_view name) {
    return only.empty() ? name.find(filter) != std::string::npos : name == only;
  };
  auto wants = [&](std::string_view section) {
    return fmt::format(",{},", sections).find(fmt::format(",{},", section)) != std::string::npos;
  };

  // The target string comes from a compile report: compile a trivial graph.
  std::string target = "?";
  {
    Graph graph("probe");
    Tensor x = graph.input("x", {4});
    graph.output("y", relu(x));
    CompileReport report;
    if (graph.finalize() && compile(graph.ir(), {}, &report))
      target = report.target;
  }
  printLine(fmt::format(R"({{"kind": "info", "impl": "kiln", "threads": {}, "target": {}}})",
                        cpu::ThreadPool::defaultThreadCount(), jsonString(target)));

  if (wants("matmul"))
    benchMatmul(selected);
  if (wants("conv"))
    benchConv(selected);
  if (wants("models"))
    benchModels(selected);
  if (wants("compile"))
    benchCompile(selected);
  return 0;
}
