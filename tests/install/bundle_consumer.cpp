// Loads the AOT bundle mlp_consumer wrote and runs it with kiln_rt alone (no compiler, no
// LLVM), on the seeded sample inputs mlp_consumer ran the compiled model on; the outputs must
// equal that model's bit for bit. Usage: bundle_consumer BUNDLE EXPECTED
#include <kiln/rt.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

using namespace kiln;

int main(int argc, char **argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: bundle_consumer BUNDLE EXPECTED\n");
    return 2;
  }
  auto loaded = runtime::bundle::loadBundle(argv[1]);
  if (!loaded) {
    std::fprintf(stderr, "bundle_consumer: %s\n", loaded.error().str().c_str());
    return 1;
  }
  if (!loaded->weightsBound) {
    std::fprintf(stderr, "bundle_consumer: the bundle should carry its weights\n");
    return 1;
  }
  const runtime::LaunchPlan &plan = loaded->model.plan();
  auto outputs = loaded->model.run(runtime::bundle::sampleTensors(plan, plan.inputs, 11));
  if (!outputs) {
    std::fprintf(stderr, "bundle_consumer: %s\n", outputs.error().str().c_str());
    return 1;
  }
  std::ifstream in(argv[2], std::ios::binary);
  std::string expected((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const HostTensor &y = outputs->at("y");
  bool same = y.byteSize() == expected.size() &&
              std::memcmp(y.bytes().data(), expected.data(), expected.size()) == 0;
  std::printf("bundle_consumer: kiln %s, %s\n", std::string(kilnVersion()).c_str(),
              runtime::bundle::summarizeTensor("y", y).c_str());
  if (!same) {
    std::fprintf(stderr, "bundle_consumer: y differs from the compiled model's (%zu bytes expected)\n",
                 expected.size());
    return 1;
  }
  std::printf("bundle_consumer: same bytes as the compiled model\n");
  return 0;
}
