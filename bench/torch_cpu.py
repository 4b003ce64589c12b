#!/usr/bin/python3
# The PyTorch side of the CPU benchmarks: the workloads of bench/cpu_bench.cpp
# (matmul, conv2d on the CNN's, VGG16's and ResNet-50's layer shapes, read from
# `kiln_cpu_bench --list-json`; the MLP and the CNN end to end), same shapes,
# fp32, NCHW, same thread count, same timing method.
#
# Each figure is one JSON line on stdout:
#   {"kind": "time", "impl": "torch", "workload": ..., "median_ms": ..., ...}
# "torch" is plain eager mode (torch.no_grad()); "torch_onednn" is eager mode
# with the weights prepacked for oneDNN (torch.utils.mkldnn.to_mkldnn), the
# fastest CPU path PyTorch 1.13 offers without a JIT. Run with the system
# python (/usr/bin/python3), which has Debian's python3-torch.
import argparse
import json
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.mkldnn

# The timing method, shared with cpu_bench.cpp (see bench/README.md).
WARMUP_RUNS = 3
MIN_RUNS = 10
MIN_SECONDS = 0.5
# A workload slower than this stops after MIN_RUNS_WHEN_SLOW runs: the
# reference BLAS behind eager matmul takes seconds per 2048 product.
MAX_SECONDS = 10.0
MIN_RUNS_WHEN_SLOW = 3

def time_it(fn):
    """Warm-up runs, then runs until both MIN_RUNS and MIN_SECONDS are reached
    (or MAX_SECONDS, after at least MIN_RUNS_WHEN_SLOW). Returns seconds per run."""
    for _ in range(WARMUP_RUNS):
        fn()
    times = []
    total = 0.0
    while True:
        start = time.perf_counter()
        fn()
        elapsed = time.perf_counter() - start
        times.append(elapsed)
        total += elapsed
        if len(times) >= MIN_RUNS and total >= MIN_SECONDS:
            break
        if total >= MAX_SECONDS and len(times) >= MIN_RUNS_WHEN_SLOW:
            break
    return times


def emit(impl, workload, times, flops=0):
    times = sorted(times)
    median = times[len(times) // 2] if len(times) % 2 else 0.5 * (
        times[len(times) // 2 - 1] + times[len(times) // 2])
    record = {
        "kind": "time",
        "impl": impl,
        "workload": workload,
        "median_ms": median * 1e3,
        "min_ms": times[0] * 1e3,
        "runs": len(times),
        "flops": flops,
    }
    print(json.dumps(record), flush=True)


class Mlp(nn.Module):
    """examples/models/Mlp.cpp: Dense(256, relu) Dense(128, relu) Dense(10, softmax) on 784."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(784, 256)
        self.fc2 = nn.Linear(256, 128)
        self.fc3 = nn.Linear(128, 10)

    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        return F.softmax(self.fc3(x), dim=-1)


class Cnn(nn.Module):
    """examples/models/FashionMnistCnn.cpp: Conv(32) Pool Conv(64) Pool Conv(64)
    Flatten Dense(64, relu) Dense(10, softmax), valid padding, NCHW, 1x28x28 in."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3)
        self.conv2 = nn.Conv2d(32, 64, 3)
        self.conv3 = nn.Conv2d(64, 64, 3)
        self.fc1 = nn.Linear(64 * 3 * 3, 64)
        self.fc2 = nn.Linear(64, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = F.relu(self.conv3(x))
        x = torch.flatten(x, 1)
        x = F.relu(self.fc1(x))
        return F.softmax(self.fc2(x), dim=-1)


def bench_matmul(workload):
    name, m, k, n = workload["name"], workload["m"], workload["k"], workload["n"]
    a = torch.randn(m, k)
    b = torch.randn(k, n)
    flops = 2 * m * k * n
    emit("torch", name, time_it(lambda: torch.matmul(a, b)), flops)
    linear = nn.Linear(k, n, bias=False)
    linear.weight.data = b.t().contiguous()
    prepacked = torch.utils.mkldnn.to_mkldnn(linear)
    emit("torch_onednn", name, time_it(lambda: prepacked(a)), flops)


def bench_conv(workload):
    name, batch, size = workload["name"], workload["batch"], workload["size"]
    cin, cout, kernel = workload["in_channels"], workload["out_channels"], workload["kernel"]
    stride, pad = workload["stride"], workload["pad"]
    x = torch.randn(batch, cin, size, size)
    w = torch.randn(cout, cin, kernel, kernel)
    out = (size + 2 * pad - kernel) // stride + 1
    flops = 2 * batch * cout * out * out * cin * kernel * kernel
    emit("torch", name, time_it(lambda: F.conv2d(x, w, stride=stride, padding=pad)), flops)
    conv = nn.Conv2d(cin, cout, kernel, stride=stride, padding=pad, bias=False)
    conv.weight.data = w
    prepacked = torch.utils.mkldnn.to_mkldnn(conv)
    emit("torch_onednn", name, time_it(lambda: prepacked(x)), flops)


def bench_models(selected):
    for model_name, build, shape in [("mlp", Mlp, (784,)), ("cnn", Cnn, (1, 28, 28))]:
        model = build().eval()
        prepacked = torch.utils.mkldnn.to_mkldnn(build().eval())
        for batch in (1, 64):
            name = f"{model_name}_b{batch}"
            if not selected(name):
                continue
            x = torch.randn(batch, *shape)
            emit("torch", name, time_it(lambda: model(x)))
            emit("torch_onednn", name, time_it(lambda: prepacked(x)))


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, default=0,
                        help="threads (default: KILN_NUM_THREADS, else all cores)")
    parser.add_argument("--filter", default="",
                        help="run only workloads whose name contains this text")
    parser.add_argument("--only", default="", help="run only the workload called this")
    parser.add_argument("--workloads", required=True,
                        help="the workloads' shapes, JSON lines (kiln_cpu_bench --list-json)")
    args = parser.parse_args()
    with open(args.workloads) as f:
        workloads = [json.loads(line) for line in f if line.strip()]
    threads = args.threads or int(os.environ.get("KILN_NUM_THREADS", "0") or 0) or os.cpu_count()
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    print(json.dumps({"kind": "info", "impl": "torch", "torch_version": torch.__version__,
                      "threads": torch.get_num_threads(),
                      "mkldnn": torch.backends.mkldnn.is_available()}), flush=True)

    def selected(name):
        return name == args.only if args.only else args.filter in name

    with torch.no_grad():
        for workload in workloads:
            if selected(workload["name"]) and workload["kind"] in ("matmul", "conv"):
                (bench_matmul if workload["kind"] == "matmul" else bench_conv)(workload)
        bench_models(selected)
    return 0


if __name__ == "__main__":
    sys.exit(main())
