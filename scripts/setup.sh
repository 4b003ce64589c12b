#!/usr/bin/env bash
# Installs kiln's build dependencies from Debian's packages when they are missing.
# Safe to run repeatedly: it only calls apt-get when a package is absent.
set -euo pipefail

packages=(
  build-essential cmake ninja-build ccache python3 pkg-config
  llvm-19-dev llvm-19-tools clang-19 libclang-rt-19-dev lld-19 libzstd-dev
  libfmt-dev catch2 libsqlite3-dev zlib1g-dev
  libonnx-dev libprotobuf-dev  # the ONNX importer (frontend/onnx)
  python3-numpy python3-torch python3-torchvision python3-onnx  # ONNX tests: PyTorch exports
  python3-dev pybind11-dev libdlpack-dev python3-pytest  # the kiln Python package (python/)
  dataset-fashion-mnist
  libopenblas-dev libdnnl-dev  # the CPU benchmark's baselines only (bench/CpuBaselines.cpp)
  xz-utils  # the GPU round trip packs its carry (scripts/gpu-roundtrip.sh)
  openmpi-bin libopenmpi-dev  # data parallelism: mpirun and the MPI plugin (runtime/dist)
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "kiln setup: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
