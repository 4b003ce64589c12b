#!/usr/bin/python3
"""ONNX models on the CPU: kiln against PyTorch on the same input, in one run.

For each torchvision model: the time `kiln import` takes and the cold compile time (kernel
cache off) at batch 1. For every torchvision model and a transformer encoder: the median time
per inference of kiln (`kiln run`) and of PyTorch (eval mode, no_grad, the same threads) at
batch 1 and 16. Prints the table and writes it with the machine, date and commit to
bench/results/onnx-cpu-<date>-<commit>.md.

usage: bench/onnx_bench.py [--build DIR] [--runs N] [--models a,b] [--note TEXT]
"""
import argparse
import datetime
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "onnx"))
import export_models  # noqa: E402  (torch, torchvision and the test models)
import torch  # noqa: E402

TORCHVISION = ["resnet18", "resnet50", "vgg11_bn", "mobilenet_v2", "mobilenet_v3_small",
               "squeezenet1_1", "densenet121", "efficientnet_b0", "shufflenet_v2_x0_5",
               "regnet_y_400mf"]
INFERENCE = TORCHVISION + ["encoder"]


class BenchEncoder(torch.nn.Module):
    """A BERT-base-like encoder, narrower: 4 layers, width 256, 8 heads, GELU MLP of 1024."""

    def __init__(self):
        super().__init__()
        layer = torch.nn.TransformerEncoderLayer(256, 8, 1024, dropout=0.0, activation="gelu",
                                                 batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, 4, enable_nested_tensor=False)

    def forward(self, x):
        return self.encoder(x)


def build(name):
    if name == "encoder":
        return BenchEncoder().eval(), ("x", (128, 256))
    model = export_models.randomize_batch_norms(getattr(torchvision_models(), name)(weights=None))
    return model.eval(), ("input", (3, 224, 224))


def torchvision_models():
    import torchvision
    return torchvision.models


def export(name, directory):
    path = os.path.join(directory, f"{name}.onnx")
    model, (input_name, sample_shape) = build(name)
    torch.manual_seed(0)
    sample = torch.randn((1,) + sample_shape)
    torch.onnx.export(model, (sample,), path, opset_version=17, input_names=[input_name],
                      output_names=["output"], dynamic_axes={input_name: {0: "batch"}})
    return model, input_name, sample_shape, path


def kiln(build_dir, *args, env=None):
    result = subprocess.run([os.path.join(build_dir, "kiln"), *args], capture_output=True,
                            text=True, env=env)
    if result.returncode != 0:
        raise RuntimeError(f"kiln {' '.join(args)} failed:\n{result.stderr}")
    return result.stdout


def median_torch_seconds(model, x, runs):
    with torch.no_grad():
        for _ in range(2):
            model(x)
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            model(x)
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def machine():
    cpu = "unknown CPU"
    flags = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name") and cpu == "unknown CPU":
                cpu = line.split(":", 1)[1].strip()
            if line.startswith("flags") and not flags:
                have = line.split(":", 1)[1].split()
                flags = ",".join(x for x in ["avx2", "fma", "avx512f", "avx512_bf16", "amx_tile"]
                                 if x in have)
    return f"{cpu} ({os.cpu_count()} cores; {flags})"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--models", default="")
    parser.add_argument("--note", default="")
    args = parser.parse_args()
    threads = os.cpu_count() or 1
    torch.set_num_threads(threads)
    os.environ.setdefault("OMP_WAIT_POLICY", "passive")
    wanted = set(args.models.split(",")) if args.models else None
    load_before = open("/proc/loadavg").read().split()[:3]
    lines = []
    with tempfile.TemporaryDirectory() as work:
        lines.append("| model | import (s) | cold compile, batch 1 (s) | kernels |")
        lines.append("|---|---|---|---|")
        exported = {}
        for name in TORCHVISION + ["encoder"]:
            if wanted and name not in wanted:
                continue
            model, input_name, shape, path = export(name, work)
            exported[name] = (model, input_name, shape, path)
            if name == "encoder":
                continue
            start = time.perf_counter()
            kiln(args.build, "import", path, "-o", os.path.join(work, "m.kir"),
                 f"--shape={input_name}=1,{','.join(map(str, shape))}")
            imported = time.perf_counter() - start
            out = kiln(args.build, "compile", path, "--target", "cpu",
                       f"--shape={input_name}=1,{','.join(map(str, shape))}",
                       env=dict(os.environ, KILN_CACHE="off"))
            compile_s = float(re.search(r"compile: ([0-9.]+) s", out).group(1))
            kernels = re.search(r"\(([0-9]+) kernels", out).group(1)
            lines.append(f"| {name} | {imported:.2f} | {compile_s:.2f} | {kernels} |")
            print(lines[-1], flush=True)
        lines.append("")
        lines.append("| model | batch | kiln (ms) | PyTorch (ms) | kiln / PyTorch speed |")
        lines.append("|---|---|---|---|---|")
        for name in INFERENCE:
            if name not in exported:
                continue
            model, input_name, shape, path = exported[name]
            for batch in (1, 16):
                x = torch.randn((batch,) + shape)
                npy = os.path.join(work, "x.npy")
                import numpy
                numpy.save(npy, x.numpy())
                out = kiln(args.build, "run", path, "--target", "cpu", "--inputs", npy,
                           f"--shape={input_name}={batch},{','.join(map(str, shape))}",
                           "--iterations", str(args.runs + 1))
                kiln_ms = float(re.search(r"time per run: ([0-9.]+) ms", out).group(1))
                torch_ms = median_torch_seconds(model, x, args.runs) * 1e3
                lines.append(f"| {name} | {batch} | {kiln_ms:.1f} | {torch_ms:.1f} | "
                             f"{torch_ms / kiln_ms:.2f}x |")
                print(lines[-1], flush=True)
    load_after = open("/proc/loadavg").read().split()[:3]
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    date = datetime.date.today().isoformat()
    header = [f"# ONNX models on the CPU, {date}, commit {commit}", "",
              f"- machine: {machine()}; {threads} threads for kiln and PyTorch "
              f"{torch.__version__} (OMP_WAIT_POLICY={os.environ['OMP_WAIT_POLICY']})",
              f"- load average before: {' '.join(load_before)}; after: {' '.join(load_after)}",
              f"- medians of {args.runs} runs after warm-up; inputs 224x224 (encoder: 128 tokens "
              f"of width 256); opset 17 exports with random weights",
              "- import: `kiln import` wall time (parse, check, convert to opset 17, shape "
              "inference, convert); cold compile: `kiln compile --target cpu` with KILN_CACHE=off"]
    if args.note:
        header.append(f"- note: {args.note}")
    text = "\n".join(header + [""] + lines) + "\n"
    print(text)
    # A rerun at the same commit (a subset of the models, say) gets a file of its own.
    stem = os.path.join(ROOT, "bench", "results", f"onnx-cpu-{date}-{commit}")
    path, n = f"{stem}.md", 2
    while os.path.exists(path):
        path, n = f"{stem}-{n}.md", n + 1
    with open(path, "w") as f:
        f.write(text)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
