# lit configuration for kiln's golden IR tests: `.kir` files run through kiln-opt
# and checked with FileCheck.
import os
import lit.formats

config.name = "kiln"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".kir"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.kiln_tools_dir, "tests", "lit-out")
config.excludes = ["lit.cfg.py", "lit.site.cfg.py.in", "Inputs"]
config.environment["PATH"] = os.pathsep.join(
    [config.kiln_tools_dir, config.kiln_examples_dir, config.filecheck_dir,
     config.environment.get("PATH", os.environ.get("PATH", ""))])
# The golden tests are the same on every machine: the CUDA driver sees no GPU,
# so the auto target is the CPU (the GPU tests are the ctest label `gpu`).
config.environment["CUDA_VISIBLE_DEVICES"] = ""
# Every kernel the tools lower is verified before and after each kernel pass, release too.
config.environment["KILN_VERIFY_KERNEL_IR"] = "1"
# The kernel cache of the golden tests stays in their output directory.
config.environment["KILN_CACHE_DIR"] = os.path.join(config.test_exec_root, "kernel-cache")
# Sanitizer builds: leak reports from a crashing parser must fail the test.
for var in ["ASAN_OPTIONS", "UBSAN_OPTIONS"]:
    if var in os.environ:
        config.environment[var] = os.environ[var]
# The CUDA toolkit's tools, for the GPU code generation tests (REQUIRES: ptxas,
# nvrtc); without them those tests are reported as unsupported, by name.
cuda_home = os.environ.get("CUDA_HOME", "/usr/local/cuda")
if os.path.exists(os.environ.get("KILN_PTXAS", os.path.join(cuda_home, "bin", "ptxas"))):
    config.available_features.add("ptxas")
if any(os.path.exists(os.path.join(d, "libnvrtc.so.13"))
       for d in [os.path.join(cuda_home, "lib64"), "/usr/local/cuda/lib64", "/usr/lib/x86_64-linux-gnu"]):
    config.available_features.add("nvrtc")
# Debian's python3-onnx writes the ONNX models of the importer's command-line tests.
import subprocess
if subprocess.run(["/usr/bin/python3", "-c", "import onnx, numpy"],
                  capture_output=True).returncode == 0:
    config.available_features.add("python-onnx")
for var in ["CUDA_HOME", "KILN_PTXAS", "KILN_NVRTC", "KILN_LIBDEVICE"]:
    if var in os.environ:
        config.environment[var] = os.environ[var]
