// <kiln/rt.h>: what a deployed program needs to load an AOT bundle and run it with kiln_rt
// alone, without the compiler, LLVM or NVRTC (docs/aot.md, docs/embedding.md).
// Link kiln::rt (CMake) or `pkg-config kiln-rt`.
#pragma once

#include "runtime/CompiledModel.h"
#include "runtime/bundle/BundleLoader.h"
#include "runtime/bundle/SampleTensors.h"
#include "support/Error.h"
#include "support/HostTensor.h"
#include "support/Tolerance.h"
#include "support/Version.h"
