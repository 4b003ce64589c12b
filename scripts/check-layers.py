#!/usr/bin/env python3
"""Fails when a source file includes a header of a higher layer (docs/architecture.md, "Layers").

kiln's layers, lowest first; a file may include its own layer's headers and lower ones'. A
path belongs to the layer of the longest prefix below that names it. Usage:
    scripts/check-layers.py [SOURCE_DIR]
Prints every include that points up, with its line, and exits 1 if there is one.
"""
import pathlib
import re
import sys

LAYERS = [
    "support",   # errors, tensors on the host, files, JSON
    "ir",        # graph IR and kernel IR, their verifiers, printers, interpreters
    "target",    # CPU and GPU target descriptions and their cache strings
    "passes",    # graph passes, fusion, lowering, kernel-IR passes
    "codegen",   # kernel IR to LLVM IR, PTX and CUDA C; NVRTC and ptxas drivers
    "runtime",   # kiln_rt: devices, executor, caches, bundles, the simulator
    "formats",   # file formats and data sets: safetensors, .npy, IDX, batches
    "compiler",  # the pipeline, tuning records' keys and lookup, AOT: graph to a compiled model
    "tuner",     # the autotuner: compiles and times candidates, so sits above compile
    "frontend",  # the C++ DSL, nn layers, PyTorch state dicts, the ONNX importer
    "training",  # autodiff programs, optimizers, the trainer
    "tools",     # the kiln command, kiln-opt, examples, benchmarks
]

# (path prefix, layer); the longest matching prefix wins.
PREFIXES = [
    ("support/", "support"),
    ("ir/", "ir"),
    ("codegen/Target.h", "target"),
    ("codegen/GpuTarget.cpp", "target"),
    ("codegen/HostKernelAbi.h", "target"),  # what host kernels call: emitted by codegen, defined by runtime/cpu
    ("codegen/HostVectorMath.h", "target"),  # libmvec's functions: mapped by codegen, listed by runtime/cpu
    ("passes/", "passes"),
    ("codegen/", "codegen"),
    ("runtime/", "runtime"),
    ("frontend/io/", "formats"),
    ("frontend/data/", "formats"),
    ("compiler/", "compiler"),
    ("compiler/tuner/", "tuner"),
    ("frontend/", "frontend"),
    ("frontend/io/TorchStateDict", "frontend"),  # maps state dicts onto the DSL's layers
    ("compiler/training/", "training"),
    ("tools/", "tools"),
    ("examples/", "tools"),
    ("bench/", "tools"),
    ("python/", "tools"),  # the Python bindings sit on top, beside the tools
]

SOURCE_DIRS = ["support", "ir", "codegen", "passes", "runtime", "frontend", "compiler", "tools",
               "examples", "bench", "python"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def layer_of(path):
    best = None
    for prefix, layer in PREFIXES:
        if path.startswith(prefix) and (best is None or len(prefix) > len(best[0])):
            best = (prefix, layer)
    return best[1] if best else None


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
    rank = {layer: i for i, layer in enumerate(LAYERS)}
    problems = []
    checked = 0
    for directory in SOURCE_DIRS:
        for file in sorted((root / directory).rglob("*")):
            if file.suffix not in (".h", ".cpp", ".def") or not file.is_file():
                continue
            path = file.relative_to(root).as_posix()
            layer = layer_of(path)
            if layer is None:
                problems.append(f"{path}: belongs to no layer (add it to PREFIXES)")
                continue
            checked += 1
            for number, line in enumerate(file.read_text(errors="replace").splitlines(), 1):
                match = INCLUDE.match(line)
                if not match or not (root / match.group(1)).is_file():
                    continue  # a system header, or one relative to the file (tests' own)
                included = layer_of(match.group(1))
                if included is not None and rank[included] > rank[layer]:
                    problems.append(f"{path}:{number}: {layer} includes {match.group(1)} "
                                    f"({included}, a higher layer)")
    for problem in problems:
        print(problem)
    if problems:
        print(f"check-layers: {len(problems)} include(s) point up", file=sys.stderr)
        return 1
    print(f"check-layers: {checked} files, every include points down or across")
    return 0


if __name__ == "__main__":
    sys.exit(main())
