#!/usr/bin/python3
# The PyTorch side of the training benchmark: the workloads of
# bench/train_bench.cpp (the trainable examples of
# examples/models/TrainingRecipes.h at the same batches), the same layers from
# bench/twins/ with logits out, Adam (lr 1e-3), cross entropy on the logits,
# fp32, NCHW, the same warm-up and timing rules.
#
# A timed step: the batch is copied from the host (as kiln's Trainer binds host
# tensors), zero_grad, forward, loss, backward, Adam's step, and the loss read
# back to the host (which waits for the device). Each figure is one JSON line:
#   {"kind": "train", "impl": "torch_eager" | "torch_compile", "workload": ..., ...}
#   {"kind": "na", "impl": "torch_compile", "workload": ..., "reason": ...}
# torch.compile compiles the model (forward and, through AOTAutograd, backward);
# Adam's step stays eager, as PyTorch's own tutorials train with it.
import argparse
import json
import math
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from twins import cnn, lstm, mlp, vgg  # noqa: E402

# The timing method, shared with train_bench.cpp (see bench/README.md).
WARMUP_STEPS = 3
MIN_STEPS = 10
MIN_SECONDS = 0.5
MAX_SECONDS = 5.0
MIN_STEPS_WHEN_SLOW = 3
FIXED_BATCHES = 4
LEARNING_RATE = 1e-3

# (recipe, benchmark batch), as train_bench.cpp's defaultWorkloads().
WORKLOADS = [("cnn", 64), ("mlp", 64), ("lstm", 32), ("vgg-transfer", 32)]
VGG_IMAGE_SIZE = 32  # the recipe's default input: Fashion-MNIST centred on 32x32 RGB


class CnnLogits(cnn.Twin):
    """The CNN recipe: the cnn twin's layers, logits out."""

    def forward(self, images):
        x = F.max_pool2d(F.relu(self.conv1(images)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(F.relu(self.conv3(x)), 1)
        return self.fc2(F.relu(self.fc1(x)))


class MlpLogits(mlp.Twin):
    def forward(self, x):
        x = F.relu(self.layers[0](x))
        x = F.relu(self.layers[1](x))
        return self.layers[2](x)


class LstmLogits(lstm.Twin):
    """Logits [batch, 20, 1000]: the next word at every position."""

    def forward(self, tokens):
        hidden, _ = self.lstm(self.embedding(tokens))
        return self.fc(hidden)


class VggTransferLogits(vgg.Twin):
    """VGG16's base, frozen (requires_grad off, as kiln's setTrainable(false)),
    and the trainable head on its input size."""

    def __init__(self, image_size):
        super().__init__()
        side = image_size // 32
        self.fc1 = nn.Linear(512 * side * side, 256)
        for parameter in self.convs.parameters():
            parameter.requires_grad_(False)

    def forward(self, images):
        x = images
        index = 0
        for count in vgg._CONVS:
            for _ in range(count):
                x = F.relu(self.convs[index](x))
                index += 1
            x = F.max_pool2d(x, 2)
        return self.fc2(F.relu(self.fc1(torch.flatten(x, 1))))


def build(recipe, batch, generator):
    """The model, its classes, and a function making a random batch on the host:
    floats standard normal, labels and tokens uniform in [0, classes)."""
    def labels(*shape):
        return lambda classes: torch.randint(0, classes, shape, generator=generator)
    if recipe == "cnn":
        return CnnLogits(), 10, {"images": lambda _: torch.randn(batch, 1, 28, 28, generator=generator),
                                 "labels": labels(batch)}
    if recipe == "mlp":
        return MlpLogits(), 10, {"x": lambda _: torch.randn(batch, 784, generator=generator),
                                 "labels": labels(batch)}
    if recipe == "lstm":
        return LstmLogits(), lstm.VOCABULARY, {"tokens": labels(batch, lstm.STEPS),
                                               "labels": labels(batch, lstm.STEPS)}
    if recipe == "vgg-transfer":
        size = VGG_IMAGE_SIZE
        return VggTransferLogits(size), 10, {
            "images": lambda _: torch.randn(batch, 3, size, size, generator=generator),
            "labels": labels(batch)}
    raise ValueError(f"no recipe called {recipe}")


def time_steps(step):
    """Warm-up steps, then steps until both MIN_STEPS and MIN_SECONDS are reached
    (or MAX_SECONDS, after at least MIN_STEPS_WHEN_SLOW). Returns seconds per
    step and the first warm-up step's seconds (torch.compile's compile)."""
    start = time.perf_counter()
    step()
    first = time.perf_counter() - start
    for _ in range(WARMUP_STEPS - 1):
        step()
    times, total = [], 0.0
    while True:
        start = time.perf_counter()
        step()
        elapsed = time.perf_counter() - start
        times.append(elapsed)
        total += elapsed
        if len(times) >= MIN_STEPS and total >= MIN_SECONDS:
            break
        if total >= MAX_SECONDS and len(times) >= MIN_STEPS_WHEN_SLOW:
            break
    return times, first


def median(values):
    values = sorted(values)
    n = len(values)
    return values[n // 2] if n % 2 else 0.5 * (values[n // 2 - 1] + values[n // 2])


def bench(recipe, batch, device, impl):
    """One workload with one implementation: a JSON-ready dict."""
    torch.manual_seed(0)
    generator = torch.Generator().manual_seed(1)
    model, classes, makers = build(recipe, batch, generator)
    model = model.to(device)
    batches = [{name: make(classes) for name, make in makers.items()}
               for _ in range(FIXED_BATCHES)]
    if device.type == "cuda":
        batches = [{name: t.pin_memory() for name, t in b.items()} for b in batches]
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.Adam(trainable, lr=LEARNING_RATE)
    forward = torch.compile(model) if impl == "torch_compile" else model
    state = {"next": 0}

    def step():
        host = batches[state["next"]]
        state["next"] = (state["next"] + 1) % FIXED_BATCHES
        inputs = {name: t.to(device, non_blocking=True) for name, t in host.items()}
        labels = inputs.pop("labels")
        optimizer.zero_grad(set_to_none=True)
        logits = forward(*inputs.values())
        loss = F.cross_entropy(logits.reshape(-1, classes), labels.reshape(-1))
        loss.backward()
        optimizer.step()
        return loss.item()

    # The fresh model's loss, for the table (kiln checks its own against log(classes)).
    with torch.no_grad():
        first_batch = {name: t.to(device) for name, t in batches[0].items()}
        labels = first_batch.pop("labels")
        first_loss = F.cross_entropy(model(*first_batch.values()).reshape(-1, classes),
                                     labels.reshape(-1)).item()
    times, first_step = time_steps(step)
    last_loss = step()
    row = {"kind": "train", "impl": impl, "workload": f"{recipe}_b{batch}", "model": recipe,
           "batch": batch, "device": str(device), "median_ms": median(times) * 1e3,
           "min_ms": min(times) * 1e3, "runs": len(times),
           "samples_per_s": batch / median(times), "first_loss": first_loss,
           "uniform_loss": math.log(classes), "last_loss": last_loss}
    if impl == "torch_compile":
        row["compile_s"] = first_step  # the first step compiles forward and backward
    if not math.isfinite(last_loss):
        row["check"] = f"the loss is {last_loss}"
    else:
        row["check"] = "ok"
    return row


def compile_unavailable(device):
    """Why torch.compile cannot run here, or None."""
    if not hasattr(torch, "compile"):
        return f"n/a (PyTorch {torch.__version__} has no torch.compile)"
    return None


def device_name(device):
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return "cpu"


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--threads", type=int, default=os.cpu_count(),
                        help="torch.set_num_threads (CPU)")
    parser.add_argument("--only", default="",
                        help="a workload (cnn_b64) or a recipe (cnn); 'none' prints only the info line")
    parser.add_argument("--filter", default="", help="workloads whose name contains this")
    parser.add_argument("--batch", type=int, default=0, help="every recipe at this batch")
    parser.add_argument("--list", action="store_true")
    parser.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    args = parser.parse_args()

    workloads = [(recipe, args.batch or batch) for recipe, batch in WORKLOADS]
    if args.list:
        for recipe, batch in workloads:
            print(f"{recipe}_b{batch}")
        return 0
    torch.set_num_threads(args.threads)
    if args.device == "cuda" and not torch.cuda.is_available():
        for recipe, batch in workloads:
            name = f"{recipe}_b{batch}"
            if (not args.only or args.only in (name, recipe)) and args.filter in name:
                print(json.dumps({"kind": "error", "impl": "torch_eager", "workload": name,
                                  "message": "no CUDA device visible to PyTorch"}), flush=True)
        return 1
    device = torch.device(args.device)
    if device.type == "cuda":
        # fp32 on both sides: kiln's fp32 contractions use no TF32.
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    print(json.dumps({"kind": "info", "impl": "torch", "version": torch.__version__,
                      "device": device_name(device), "threads": torch.get_num_threads(),
                      "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", "")}), flush=True)
    status = 0
    for recipe, batch in workloads:
        name = f"{recipe}_b{batch}"
        if args.only and args.only not in (name, recipe):
            continue
        if args.filter not in name:
            continue
        try:
            print(json.dumps(bench(recipe, batch, device, "torch_eager")), flush=True)
        except Exception as error:  # noqa: BLE001 - reported in the table
            print(json.dumps({"kind": "error", "impl": "torch_eager", "workload": name,
                              "message": str(error).splitlines()[0]}), flush=True)
            status = 1
        reason = "n/a (skipped: --no-compile)" if args.no_compile else compile_unavailable(device)
        if reason:
            print(json.dumps({"kind": "na", "impl": "torch_compile", "workload": name,
                              "reason": reason}), flush=True)
            continue
        try:
            print(json.dumps(bench(recipe, batch, device, "torch_compile")), flush=True)
        except Exception as error:  # noqa: BLE001 - a failure of the compiler is a result
            print(json.dumps({"kind": "na", "impl": "torch_compile", "workload": name,
                              "reason": "failed: " + str(error).strip().splitlines()[0][:200]}),
                  flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
