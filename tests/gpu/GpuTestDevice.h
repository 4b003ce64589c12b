// The GPU the test_gpu executable runs on, opened once by its main before any test.
#pragma once

#include "runtime/cuda/CudaDevice.h"

/// The device opened by test_gpu's main (GPU 0); tests only run when it opened.
kiln::runtime::cuda::CudaDevice &gpuTestDevice();
