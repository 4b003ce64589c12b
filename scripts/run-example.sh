#!/usr/bin/env bash
# The main job from a fresh clone: installs dependencies, builds kiln optimized,
# builds the Fashion-MNIST CNN in the DSL, prints its IR and classifies a batch
# of real Fashion-MNIST test images through the reference interpreter.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/setup.sh"
"$root/scripts/build.sh" release fashion_mnist_cnn
"$root/build/release/examples/fashion_mnist_cnn" "$@"
