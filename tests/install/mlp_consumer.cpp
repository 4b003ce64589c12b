// Builds an MLP with kiln's DSL, compiles it for the CPU, runs it on random inputs, checks the
// outputs against the fp64 reference interpreter, and writes the model as an AOT bundle with
// its weights, plus the outputs the compiled model gave for bundle_consumer's seeded inputs
// (y's f32 values, raw little-endian bytes). Usage: mlp_consumer BUNDLE EXPECTED
#include <kiln/kiln.h>

#include <cstdio>
#include <fstream>

using namespace kiln;

int main(int argc, char **argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: mlp_consumer BUNDLE EXPECTED\n");
    return 2;
  }
  Graph graph("consumer_mlp", /*seed=*/7);
  Tensor x = graph.input("x", {5, 37}); // sizes off every vector width
  nn::Sequential mlp(nn::Dense(29, nn::Activation::Relu), nn::Dense(10, nn::Activation::Softmax));
  graph.output("y", mlp(graph, x));
  if (auto ok = graph.finalize(); !ok) {
    std::fprintf(stderr, "mlp_consumer: %s\n", ok.error().str().c_str());
    return 1;
  }

  CompileOptions options;
  options.target = TargetKind::Cpu;
  options.useKernelCache = false;
  auto model = compile(graph.ir(), options);
  if (!model) {
    std::fprintf(stderr, "mlp_consumer: compile: %s\n", model.error().str().c_str());
    return 1;
  }
  Rng rng(2026);
  NamedTensors inputs = graph.paramValues();
  inputs["x"] = HostTensor::randomNormal(DType::F32, {5, 37}, rng);
  auto outputs = model->run(inputs);
  auto reference = evaluate(graph, {{"x", inputs["x"]}});
  if (!outputs || !reference) {
    std::fprintf(stderr, "mlp_consumer: run failed\n");
    return 1;
  }
  Comparison check = compareTensors(outputs->at("y"), reference->at("y"), toleranceFor(DType::F32));
  std::printf("mlp_consumer: y f32[5,10] vs reference: max abs error %.3g (%s)\n",
              check.maxAbsError, check.ok ? "ok" : check.firstMismatchStr.c_str());
  if (!check.ok)
    return 1;

  // The bundle carries the weights; bundle_consumer feeds it seed 11's sample inputs.
  compiler::AotOptions aot;
  aot.target = TargetKind::Cpu;
  aot.compile.useKernelCache = false;
  aot.weights = graph.paramValues();
  if (auto written = compiler::writeBundle(graph.ir(), aot, argv[1]); !written) {
    std::fprintf(stderr, "mlp_consumer: aot: %s\n", written.error().str().c_str());
    return 1;
  }
  auto loaded = runtime::bundle::loadBundle(argv[1]);
  if (!loaded) {
    std::fprintf(stderr, "mlp_consumer: %s\n", loaded.error().str().c_str());
    return 1;
  }
  NamedTensors sample = runtime::bundle::sampleTensors(loaded->model.plan(),
                                                       loaded->model.plan().inputs, 11);
  sample.insert(graph.paramValues().begin(), graph.paramValues().end());
  auto expected = model->run(sample);
  std::ofstream out(argv[2], std::ios::binary);
  if (expected) {
    std::span<const uint8_t> bytes = expected->at("y").bytes();
    out.write(reinterpret_cast<const char *>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  if (!expected || !out.flush()) {
    std::fprintf(stderr, "mlp_consumer: could not write %s\n", argv[2]);
    return 1;
  }
  std::printf("mlp_consumer: wrote %s and %s\n", argv[1], argv[2]);
  return 0;
}
