#!/usr/bin/env bash
# The main job from a fresh clone: installs dependencies, builds kiln optimized,
# builds the Fashion-MNIST CNN in the DSL, compiles it for the best device present
# (the CPU through LLVM's host JIT in this build), checks a batch against the
# reference interpreter and classifies the Fashion-MNIST test set, printing
# accuracy and time per batch.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh"
"$root/scripts/build.sh" release fashion_mnist_cnn
"$root/build/release/examples/fashion_mnist_cnn" "$@"
