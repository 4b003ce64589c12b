// <kiln/kiln.h>: everything a program needs to build a model with the DSL, compile it for a
// device, run it and check it against the reference interpreter (docs/embedding.md).
// Link kiln::kiln (CMake) or `pkg-config kiln`.
#pragma once

#include "compiler/CheckNumerics.h"
#include "compiler/Compile.h"
#include "compiler/aot/AotBundle.h"
#include "compiler/training/Trainer.h"
#include "frontend/Evaluate.h"
#include "frontend/Graph.h"
#include "frontend/Ops.h"
#include "frontend/Tensor.h"
#include "frontend/io/Safetensors.h"
#include "frontend/nn/Layers.h"
#include "frontend/nn/Losses.h"
#include "ir/graph/Interpreter.h"
#include "ir/graph/Parser.h"
#include "ir/graph/Printer.h"
#include "ir/graph/Verifier.h"

#include <kiln/rt.h>
