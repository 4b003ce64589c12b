// kiln_cpu_bench: kiln's side of the CPU benchmarks (matmul, conv2d on the
// CNN's and VGG's layer shapes, the MLP and the CNN end to end), plus compile
// time and planned memory of every example model. One JSON object per line on
// stdout; bench/run_cpu_bench.sh joins them with bench/torch_cpu.py's.
#include "bench/CpuBaselines.h"
#include "bench/CpuTiming.h"
#include "bench/FusedSchedules.h"
#include "bench/JsonLines.h"
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
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace {

using namespace kiln;
using kiln::bench::jsonString;
using kiln::bench::printLine;
using kiln::bench::printTime;
using kiln::bench::schedulesInDump;

struct MatmulShape {
  std::string name;
  int64_t m, k, n;
};

/// Square products, and the transformer block's projections (examples/models/TransformerBlock:
/// 768 wide, MLP 3072, 128 tokens) at batch 1 and 8.
std::vector<MatmulShape> matmulShapes() {
  std::vector<MatmulShape> shapes;
  for (int64_t n : {256, 512, 1024, 2048})
    shapes.push_back({fmt::format("matmul_{}", n), n, n, n});
  struct Projection {
    const char *name;
    int64_t in, out;
  };
  for (int64_t tokens : {128, 1024})
    for (Projection p : {Projection{"qkv", 768, 2304}, Projection{"attn_out", 768, 768},
                         Projection{"mlp_fc", 768, 3072}, Projection{"mlp_proj", 3072, 768}})
      shapes.push_back({fmt::format("matmul_tf_{}_m{}", p.name, tokens), tokens, p.in, p.out});
  return shapes;
}

struct ConvShape {
  std::string name;
  bench::ConvProblem problem;
};

/// Every distinct conv layer of the CNN (valid padding), VGG16 and ResNet-50 (224 x 224
/// input), at batch 1 and 16, NCHW as the models use.
std::vector<ConvShape> convShapes() {
  struct Layer {
    const char *name;
    int64_t inChannels, outChannels, size, kernel, stride, pad;
  };
  static constexpr Layer kLayers[] = {
      {"cnn1", 1, 32, 28, 3, 1, 0},           {"cnn2", 32, 64, 13, 3, 1, 0},
      {"cnn3", 64, 64, 5, 3, 1, 0},           {"vgg1_1", 3, 64, 224, 3, 1, 1},
      {"vgg1_2", 64, 64, 224, 3, 1, 1},       {"vgg2_1", 64, 128, 112, 3, 1, 1},
      {"vgg2_2", 128, 128, 112, 3, 1, 1},     {"vgg3_1", 128, 256, 56, 3, 1, 1},
      {"vgg3_2", 256, 256, 56, 3, 1, 1},      {"vgg4_1", 256, 512, 28, 3, 1, 1},
      {"vgg4_2", 512, 512, 28, 3, 1, 1},      {"vgg5_1", 512, 512, 14, 3, 1, 1},
      {"rn_conv1", 3, 64, 224, 7, 2, 3},      {"rn1_reduce", 64, 64, 56, 1, 1, 0},
      {"rn1_3x3", 64, 64, 56, 3, 1, 1},       {"rn1_expand", 64, 256, 56, 1, 1, 0},
      {"rn1_in", 256, 64, 56, 1, 1, 0},       {"rn2_reduce", 256, 128, 56, 1, 1, 0},
      {"rn2_3x3s2", 128, 128, 56, 3, 2, 1},   {"rn2_down", 256, 512, 56, 1, 2, 0},
      {"rn2_expand", 128, 512, 28, 1, 1, 0},  {"rn2_in", 512, 128, 28, 1, 1, 0},
      {"rn2_3x3", 128, 128, 28, 3, 1, 1},     {"rn3_3x3s2", 256, 256, 28, 3, 2, 1},
      {"rn3_down", 512, 1024, 28, 1, 2, 0},   {"rn3_reduce", 512, 256, 28, 1, 1, 0},
      {"rn3_expand", 256, 1024, 14, 1, 1, 0}, {"rn3_in", 1024, 256, 14, 1, 1, 0},
      {"rn3_3x3", 256, 256, 14, 3, 1, 1},     {"rn4_reduce", 1024, 512, 14, 1, 1, 0},
      {"rn4_3x3s2", 512, 512, 14, 3, 2, 1},   {"rn4_down", 1024, 2048, 14, 1, 2, 0},
      {"rn4_expand", 512, 2048, 7, 1, 1, 0},  {"rn4_in", 2048, 512, 7, 1, 1, 0},
      {"rn4_3x3", 512, 512, 7, 3, 1, 1},
  };
  std::vector<ConvShape> shapes;
  for (int64_t batch : {1, 16})
    for (const Layer &l : kLayers)
      shapes.push_back({fmt::format("conv_{}_b{}", l.name, batch),
                        {batch, l.inChannels, l.outChannels, l.size, l.kernel, l.stride, l.pad}});
  return shapes;
}

void printError(std::string_view workload, const Error &error) {
  bench::printError("kiln", workload, error.message());
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
using OutputCheck =
    std::function<std::string(const NamedTensors &inputs, const NamedTensors &outputs)>;

struct Measured {
  NamedTensors inputs; ///< what the timed runs read (the baselines then read the same)
  std::vector<double> seconds;
  std::string check;
  std::string schedules; ///< the kernels' schedules, "; "-separated
};

/// Where a timed run's outputs go: new tensors every run (as PyTorch allocates its results),
/// or the previous run's tensors (as OpenBLAS and oneDNN write into the caller's C and dst).
enum class Outputs { AllocatedPerRun, Recycled };

/// Compiles `graph`, binds `params`, times run() on random inputs and checks
/// the last outputs.
Expected<Measured> compileAndTime(Graph &graph, const NamedTensors &params,
                                  const OutputCheck &check, Outputs outputPolicy) {
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
  RunOptions runOptions;
  if (outputPolicy == Outputs::Recycled)
    runOptions.recycledOutputs = &outputs;
  KILN_TRY(std::vector<double> seconds, bench::timeCpuRuns([&]() -> Expected<void> {
             KILN_TRY(NamedTensors results, model.run(inputs, runOptions));
             outputs = std::move(results);
             return {};
           }));
  // The check and the baselines read the parameters too.
  for (const auto &[name, value] : params)
    inputs.insert_or_assign(name, value);
  std::string verdict = check(inputs, outputs);
  return Measured{std::move(inputs), std::move(seconds), verdict, schedulesInDump(dump.str())};
}

/// Times kiln on the workload `build` makes, then returns what its runs read (nothing when it
/// failed), for the baselines. Its outputs are recycled across runs, as the baselines write
/// into one preallocated result. `impl` names the row's side: "kiln", or "kiln_nhwc" for a
/// convolution built in NHWC.
std::optional<NamedTensors> benchWorkload(std::string_view name, double flops,
                                          const std::function<void(Graph &)> &build,
                                          const OutputCheck &check,
                                          std::string_view impl = "kiln") {
  Graph graph{std::string(name)};
  build(graph);
  // Parameters (a convolution's filter) are bound once, as a framework module holds its
  // weights and as oneDNN's rows leave the weight reorder out (timed on a row of its own).
  auto measured = compileAndTime(graph, graph.paramValues(), check, Outputs::Recycled);
  if (!measured) {
    bench::printError(impl, name, measured.error().message());
    return std::nullopt;
  }
  printTime(impl, name, std::move(measured->seconds), flops, measured->check, measured->schedules);
  return std::move(measured->inputs);
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

std::string checkMatmul(const MatmulShape &shape, const HostTensor &aTensor,
                        const HostTensor &bTensor, const HostTensor &c) {
  auto a = aTensor.as<float>(), b = bTensor.as<float>();
  const int64_t m = shape.m, k = shape.k, n = shape.n;
  Rng rng(7);
  SampledCheck check;
  for (int s = 0; s < kSamples; ++s) {
    int64_t i = static_cast<int64_t>(rng.nextU64() % m),
            j = static_cast<int64_t>(rng.nextU64() % n);
    if (s == 0)
      i = m - 1, j = n - 1; // the last row and column: edge tiles
    double sum = 0, absSum = 0;
    for (int64_t p = 0; p < k; ++p) {
      double product = double(a[i * k + p]) * double(b[p * n + j]);
      sum += product;
      absSum += std::abs(product);
    }
    check.expect(i * n + j, sum, absSum);
  }
  return check.verdict(c);
}

/// `nhwc`: x is [N, H, W, C], w [O, KH, KW, C] and y [N, OH, OW, O]; else all NCHW.
std::string checkConv(const bench::ConvProblem &p, const HostTensor &xTensor,
                      const HostTensor &wTensor, const HostTensor &y, bool nhwc = false) {
  auto x = xTensor.as<float>(), w = wTensor.as<float>();
  const int64_t size = p.size, out = p.outSize(), c = p.inChannels, r = p.kernel;
  Rng rng(7);
  SampledCheck check;
  for (int sample = 0; sample < kSamples; ++sample) {
    auto pick = [&](int64_t bound) { return static_cast<int64_t>(rng.nextU64() % bound); };
    int64_t n = pick(p.batch), o = pick(p.outChannels), oy = pick(out), ox = pick(out);
    if (sample == 0) // the last element: edge tiles and the padded corner
      n = p.batch - 1, o = p.outChannels - 1, oy = ox = out - 1;
    double sum = 0, absSum = 0;
    for (int64_t ci = 0; ci < c; ++ci)
      for (int64_t ky = 0; ky < r; ++ky)
        for (int64_t kx = 0; kx < r; ++kx) {
          int64_t iy = oy * p.stride + ky - p.pad, ix = ox * p.stride + kx - p.pad;
          if (iy < 0 || iy >= size || ix < 0 || ix >= size)
            continue;
          int64_t xAt = nhwc ? ((n * size + iy) * size + ix) * c + ci
                             : ((n * c + ci) * size + iy) * size + ix;
          int64_t wAt = nhwc ? ((o * r + ky) * r + kx) * c + ci : ((o * c + ci) * r + ky) * r + kx;
          double product = double(x[xAt]) * double(w[wAt]);
          sum += product;
          absSum += std::abs(product);
        }
    check.expect(nhwc ? ((n * out + oy) * out + ox) * p.outChannels + o
                      : ((n * p.outChannels + o) * out + oy) * out + ox,
                 sum, absSum);
  }
  return check.verdict(y);
}

void benchMatmul(const std::function<bool(std::string_view)> &selected) {
  for (const MatmulShape &shape : matmulShapes()) {
    if (!selected(shape.name))
      continue;
    double flops = 2.0 * shape.m * shape.k * shape.n;
    auto inputs = benchWorkload(
        shape.name, flops,
        [&shape](Graph &g) {
          Tensor a = g.input("a", {shape.m, shape.k});
          Tensor b = g.input("b", {shape.k, shape.n});
          g.output("c", matmul(a, b));
        },
        [&shape](const NamedTensors &in, const NamedTensors &out) {
          return checkMatmul(shape, in.at("a"), in.at("b"), out.at("c"));
        });
    if (!inputs)
      continue;
    const HostTensor &a = inputs->at("a"), &b = inputs->at("b");
    bench::benchMatmulBaselines(shape.name, a, b, flops,
                                [&](const HostTensor &c) { return checkMatmul(shape, a, b, c); });
  }
}

void benchConv(const std::function<bool(std::string_view)> &selected) {
  for (const ConvShape &shape : convShapes()) {
    if (!selected(shape.name))
      continue;
    const bench::ConvProblem &p = shape.problem;
    double flops = 2.0 * p.batch * p.outChannels * p.outSize() * p.outSize() * p.inChannels *
                   p.kernel * p.kernel;
    auto builder = [&p](bool nhwc) {
      return [&p, nhwc](Graph &g) {
        Tensor x = g.input("x", nhwc ? Shape{p.batch, p.size, p.size, p.inChannels}
                                     : Shape{p.batch, p.inChannels, p.size, p.size});
        Rng rng(2);
        Tensor w = g.param("w", HostTensor::randomNormal(
                                    DType::F32,
                                    nhwc ? Shape{p.outChannels, p.kernel, p.kernel, p.inChannels}
                                         : Shape{p.outChannels, p.inChannels, p.kernel, p.kernel},
                                    rng));
        Conv2DOptions options;
        options.stride = {p.stride, p.stride};
        options.padding = Padding::symmetric(p.pad, p.pad);
        options.layout = nhwc ? Layout::NHWC : Layout::NCHW;
        g.output("y", conv2d(x, w, options));
      };
    };
    auto checker = [&p](bool nhwc) {
      return [&p, nhwc](const NamedTensors &in, const NamedTensors &out) {
        return checkConv(p, in.at("x"), in.at("w"), out.at("y"), nhwc);
      };
    };
    auto inputs = benchWorkload(shape.name, flops, builder(false), checker(false));
    if (!inputs)
      continue;
    // The convolution built in NHWC, kiln's CPU layout for convolutions that feed one another
    // (as oneDNN's row is in its own layout), beside the NCHW one, which a lone convolution
    // keeps (Winograd where its rule takes the layer).
    benchWorkload(shape.name, flops, builder(true), checker(true), "kiln_nhwc");
    const HostTensor &x = inputs->at("x"), &w = inputs->at("w");
    bench::benchConvBaselines(shape.name, p, x, w, flops,
                              [&](const HostTensor &y) { return checkConv(p, x, w, y); });
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
      auto measured = compileAndTime(graph, graph.paramValues(), check, Outputs::AllocatedPerRun);
      if (!measured) {
        printError(name, measured.error());
        continue;
      }
      printTime("kiln", name, std::move(measured->seconds), 0, measured->check,
                measured->schedules);
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

constexpr const char *kUsage =
    R"(usage: kiln_cpu_bench [--filter TEXT | --only NAME] [--sections LIST] [--list]

Times kiln on the CPU workloads of bench/README.md and prints one JSON object
per line. KILN_NUM_THREADS sets the thread count (default: all cores).
  --filter TEXT    only workloads (and compiled models) whose name contains TEXT
  --only NAME      only the workload (or compiled model) called NAME
  --list           print the names of the timed workloads, one a line, and exit
  --list-json      print each timed workload's shape as a JSON line (bench/torch_cpu.py reads
                   them), and exit
  --sections LIST  comma-separated subset of info,matmul,conv,models,compile (info: the
                   machine's fp32 peak and the baselines' versions and kernels)
                   (default: all)
)";

} // namespace

int main(int argc, char **argv) {
  std::string filter, only;
  std::string sections = "info,matmul,conv,models,compile";
  bool list = false, listJson = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if ((arg == "--filter" || arg == "--only" || arg == "--sections") && i + 1 < argc) {
      (arg == "--filter" ? filter : arg == "--only" ? only : sections) = argv[++i];
    } else if (arg == "--list") {
      list = true;
    } else if (arg == "--list-json") {
      listJson = true;
    } else {
      std::fputs(kUsage, arg == "--help" ? stdout : stderr);
      return arg == "--help" ? 0 : 2;
    }
  }
  if (list || listJson) {
    for (const MatmulShape &m : matmulShapes())
      fmt::print(
          fmt::runtime(listJson ? R"({{"name": "{}", "kind": "matmul", "m": {}, "k": {}, "n": {}}})"
                                  "\n"
                                : "{}\n"),
          m.name, m.m, m.k, m.n);
    for (const ConvShape &c : convShapes()) {
      const bench::ConvProblem &p = c.problem;
      fmt::print(
          fmt::runtime(listJson
                           ? R"({{"name": "{}", "kind": "conv", "batch": {}, "in_channels": {}, )"
                             R"("out_channels": {}, "size": {}, "kernel": {}, "stride": {}, )"
                             R"("pad": {}}})"
                             "\n"
                           : "{}\n"),
          c.name, p.batch, p.inChannels, p.outChannels, p.size, p.kernel, p.stride, p.pad);
    }
    for (const char *model : {"mlp", "cnn"})
      for (int batch : {1, 64})
        fmt::print(fmt::runtime(listJson ? R"({{"name": "{}_b{}", "kind": "model"}})"
                                           "\n"
                                         : "{}_b{}\n"),
                   model, batch);
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
  if (wants("info"))
    bench::printBaselineInfo(cpu::ThreadPool::defaultThreadCount());

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
