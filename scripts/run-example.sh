#!/usr/bin/env bash
# The main job from a fresh clone: installs dependencies, builds kiln optimized,
# trains the seed CNN on Fashion-MNIST for one epoch on the best device present
# (the GPU when the CUDA driver finds one, else the CPU through LLVM's host JIT)
# with forward, backward and update compiled into one program, and reports the
# test accuracy and samples/s. Then the fashion_mnist_cnn example classifies the
# test set with the trained weights, checking a batch against the reference
# interpreter. Extra arguments go to `kiln train` (e.g. --epochs 2).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh"
"$root/scripts/build.sh" release kiln_cli fashion_mnist_cnn
weights="$(mktemp -d)/cnn.safetensors"
trap 'rm -rf "$(dirname "$weights")"' EXIT
"$root/build/release/kiln" train cnn --epochs 1 --save-weights "$weights" "$@"
"$root/build/release/examples/fashion_mnist_cnn" --weights "$weights"
