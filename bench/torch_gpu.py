#!/usr/bin/env python3
"""End-to-end inference of kiln's example models against their PyTorch twins
(bench/twins) on the same device: PyTorch eager and torch.compile, with the
same weights (written as safetensors and given to `kiln run --params`), the
same inputs, and kiln's outputs compared with the twin's.

Each run times what `kiln run` times: host inputs up to the device, the model,
outputs back to the host (synchronized by that copy); the weights stay on the
device on both sides. Prints a table and writes
bench/results/e2e-<device>-<date>-<commit>.md. See bench/README.md.

--precision bf16-mixed runs kiln under its bf16-mixed policy and the twins
under torch.autocast (bfloat16), eager and torch.compile, and compares all
three with the fp32 eager twin (the report gets a -bf16-mixed suffix)."""
import argparse
import datetime
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
import zlib

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from twins import TWINS  # noqa: E402
from twins import safetensors_io  # noqa: E402

WARMUP_RUNS = 3
# kiln's outputs against the twin's: |kiln - twin| <= ABS_TOL * scale + REL_TOL * |twin|,
# scale = max(1, max |twin|). Both sides compute in fp32 (TF32 off) but in different
# orders and with different conv algorithms, so a few ulps per op add up over a
# model's depth; 2e-4 of the output's scale stays far below what a wrong kernel gives.
ABS_TOL = 2e-4
REL_TOL = 2e-3
# --precision bf16-mixed: kiln's policy tolerance (docs/precision.md): every output within
# 2^-5 of its own scale, max |fp32 twin|, for kiln and for PyTorch's autocast alike.
BF16_MIXED_TOL = 2.0 ** -5


def seeded_params(twin, seed):
    """Random weights with kiln's names and layouts; each from its own seed, so a
    name's value does not depend on which other names exist."""
    params = {}
    for name, shape in twin.param_shapes().items():
        generator = torch.Generator().manual_seed(seed * 1000003 + zlib.crc32(name.encode()))
        field = name.rsplit(".", 1)[-1]
        normal = torch.randn(shape, generator=generator)
        if field == "running_var":
            value = torch.rand(shape, generator=generator) + 0.5
        elif field == "running_mean" or field == "bias":
            value = 0.1 * normal
        elif len(shape) == 1:  # batch and layer norm scales
            value = 1.0 + 0.1 * normal
        elif len(shape) == 4:  # conv filters [O, I, KH, KW]: He scaling keeps relu stacks O(1)
            fan_in = shape[1] * shape[2] * shape[3]
            value = normal * (2.0 / fan_in) ** 0.5
        else:  # dense [in, out], embeddings [vocabulary, dim]
            value = normal * (1.0 / shape[0]) ** 0.5
        params[name] = value.float().contiguous()
    return params


def seeded_inputs(twin, batch, seed):
    generator = torch.Generator().manual_seed(seed + 7)
    inputs = {}
    for name, (shape, kind) in twin.input_specs(batch).items():
        if isinstance(kind, tuple):  # ("int", bound): token ids
            inputs[name] = torch.randint(0, kind[1], shape, generator=generator, dtype=torch.int64)
        else:
            inputs[name] = torch.randn(shape, generator=generator)
    return inputs


def synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_runs(fn, host_inputs, device, runs):
    """Median and min milliseconds of fn on inputs copied from the host each run,
    the output copied back (which waits for the device)."""
    def once():
        device_inputs = {name: value.to(device) for name, value in host_inputs.items()}
        return fn(**device_inputs).to("cpu")

    with torch.no_grad():
        for _ in range(WARMUP_RUNS):
            output = once()
        times = []
        for _ in range(runs):
            synchronize(device)
            start = time.perf_counter()
            once()
            times.append((time.perf_counter() - start) * 1e3)
    times.sort()
    n = len(times)
    median = times[n // 2] if n % 2 else 0.5 * (times[n // 2 - 1] + times[n // 2])
    return median, times[0], output


def run_kiln(args, name, batch, params_path, inputs_path, output_path):
    """Runs `kiln run`; returns (median ms, stdout) or raises RuntimeError."""
    command = [args.kiln, "run", f"example:{name}", "--target", args.kiln_target,
               "--batch", str(batch), "--params", params_path, "--inputs", inputs_path,
               "--output", output_path, "--iterations", str(args.iterations + 1)]
    if args.kiln_target == "cuda":
        command += ["--backend", args.backend]
    if args.precision != "fp32":  # fp32 passes nothing, as before the flag existed
        command += ["--precision", args.precision]
    command += args.kiln_flag_list
    try:
        result = subprocess.run(command, capture_output=True, text=True,
                                timeout=args.kiln_timeout or None)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"kiln run did not finish in {args.kiln_timeout} s (stopped)")
    if result.returncode != 0:
        tail = (result.stderr.strip() or result.stdout.strip()).splitlines()[-3:]
        raise RuntimeError(f"kiln run exited {result.returncode}: {' / '.join(tail)}")
    match = re.search(r"^time per run: ([0-9.]+) ms", result.stdout, re.MULTILINE)
    if not match:
        raise RuntimeError("kiln run printed no 'time per run' line")
    return float(match.group(1)), result.stdout


def compare(kiln_output, twin_output):
    """(max abs error, max rel error, ok) of kiln's output against the twin's."""
    kiln_output = kiln_output.double()
    twin_output = twin_output.double()
    if kiln_output.shape != twin_output.shape:
        return float("inf"), float("inf"), False
    difference = (kiln_output - twin_output).abs()
    scale = max(1.0, twin_output.abs().max().item())
    bound = ABS_TOL * scale + REL_TOL * twin_output.abs()
    ok = bool((difference <= bound).all()) and bool(torch.isfinite(kiln_output).all())
    relative = difference / (twin_output.abs() + ABS_TOL * scale)
    return difference.max().item(), relative.max().item(), ok


def compare_scaled(output, reference):
    """(max |output - reference| / max |reference|, ok) against the bf16-mixed tolerance."""
    output = output.double()
    reference = reference.double()
    if output.shape != reference.shape:
        return float("inf"), False
    scale = reference.abs().max().item() or 1.0
    if not bool(torch.isfinite(output).all()):
        return float("inf"), False
    error = (output - reference).abs().max().item() / scale
    return error, error <= BF16_MIXED_TOL


class Autocast(torch.nn.Module):
    """The twin's forward under torch.autocast(device type, bfloat16); torch.compile
    compiles this wrapper, so the autocast region is part of the compiled graph."""

    def __init__(self, model, device_type):
        super().__init__()
        self.model = model
        self.device_type = device_type

    def forward(self, **inputs):
        with torch.autocast(self.device_type, dtype=torch.bfloat16):
            return self.model(**inputs)


def autocast_unavailable(device):
    """None where torch.autocast(device type, bfloat16) runs a matmul in bf16 here,
    else why not (old PyTorch, a device without bf16)."""
    if not hasattr(torch, "autocast"):
        return f"PyTorch {torch.__version__} has no torch.autocast"
    if device.type == "cuda" and not torch.cuda.is_bf16_supported():
        return f"{torch.cuda.get_device_name(device)} has no bf16"
    try:
        with torch.no_grad(), torch.autocast(device.type, dtype=torch.bfloat16):
            a = torch.ones(4, 4, device=device)
            dtype = (a @ a).dtype
    except Exception as error:  # noqa: BLE001 - any failure means no autocast here
        return f"autocast on {device.type}: {first_line(error)}"
    if dtype != torch.bfloat16:
        return f"autocast on {device.type} left a matmul in {dtype}"
    return None


def first_line(error):
    text = f"{type(error).__name__}: {error}".strip().splitlines()
    return (text[0] if text else type(error).__name__)[:160]


def bench_model(args, twin, device, work):
    if args.precision == "bf16-mixed":
        return bench_model_bf16_mixed(args, twin, device, work)
    batch = args.batch or twin.DEFAULT_BATCH
    row = {"model": twin.NAME, "batch": batch}
    params = seeded_params(twin, args.seed)
    inputs = seeded_inputs(twin, batch, args.seed)
    params_path = os.path.join(work, f"{twin.NAME}-params.safetensors")
    inputs_path = os.path.join(work, f"{twin.NAME}-inputs.safetensors")
    output_path = os.path.join(work, f"{twin.NAME}-output.safetensors")
    safetensors_io.save(params_path, params)
    safetensors_io.save(inputs_path, inputs)

    try:
        row["kiln_ms"], _ = run_kiln(args, twin.NAME, batch, params_path, inputs_path, output_path)
        kiln_output = safetensors_io.load(output_path)[twin.OUTPUT]
    except (RuntimeError, KeyError, OSError) as error:
        row["kiln_error"] = first_line(error)
        kiln_output = None

    model = twin.Twin().eval()
    model.load_kiln(params)
    model = model.to(device)
    row["eager_ms"], row["eager_min_ms"], twin_output = time_runs(model, inputs, device,
                                                                  args.iterations)
    if kiln_output is not None:
        row["max_abs"], row["max_rel"], row["ok"] = compare(kiln_output, twin_output)

    if not hasattr(torch, "compile"):
        row["compile_error"] = f"n/a (PyTorch {torch.__version__} has no torch.compile)"
    else:
        try:
            compiled = torch.compile(model)
            row["compile_ms"], row["compile_min_ms"], compiled_output = time_runs(
                compiled, inputs, device, args.iterations)
            # torch.compile must compute what eager does, or its time means nothing.
            _, _, same = compare(compiled_output, twin_output)
            if not same:
                row["compile_note"] = "its output differs from eager's"
        except Exception as error:  # noqa: BLE001 - any failure of the compiler is a result
            row["compile_error"] = "failed: " + first_line(error)
    return row


def bench_model_bf16_mixed(args, twin, device, work):
    """kiln --precision bf16-mixed against the twin under autocast (bf16), eager and
    torch.compile; all three judged against the fp32 eager twin (TF32 off)."""
    batch = args.batch or twin.DEFAULT_BATCH
    row = {"model": twin.NAME, "batch": batch}
    params = seeded_params(twin, args.seed)
    inputs = seeded_inputs(twin, batch, args.seed)
    params_path = os.path.join(work, f"{twin.NAME}-params.safetensors")
    inputs_path = os.path.join(work, f"{twin.NAME}-inputs.safetensors")
    output_path = os.path.join(work, f"{twin.NAME}-output.safetensors")
    safetensors_io.save(params_path, params)
    safetensors_io.save(inputs_path, inputs)

    try:
        row["kiln_ms"], _ = run_kiln(args, twin.NAME, batch, params_path, inputs_path, output_path)
        kiln_output = safetensors_io.load(output_path)[twin.OUTPUT]
    except (RuntimeError, KeyError, OSError) as error:
        row["kiln_error"] = first_line(error)
        kiln_output = None

    model = twin.Twin().eval()
    model.load_kiln(params)
    model = model.to(device)
    with torch.no_grad():  # the reference: the fp32 eager twin, TF32 off, not timed
        reference = model(**{name: value.to(device) for name, value in inputs.items()}).to("cpu")
    if kiln_output is not None:
        row["kiln_err"], row["ok"] = compare_scaled(kiln_output, reference)

    if args.autocast_unavailable:
        row["eager_error"] = row["compile_error"] = f"n/a ({args.autocast_unavailable})"
        return row
    autocast = Autocast(model, device.type)
    try:
        row["eager_ms"], row["eager_min_ms"], eager_output = time_runs(
            autocast, inputs, device, args.iterations)
        row["eager_err"], row["eager_ok"] = compare_scaled(eager_output, reference)
    except Exception as error:  # noqa: BLE001 - an op autocast cannot run is a result
        row["eager_error"] = "failed: " + first_line(error)

    if not hasattr(torch, "compile"):
        row["compile_error"] = f"n/a (PyTorch {torch.__version__} has no torch.compile)"
    else:
        try:
            compiled = torch.compile(autocast)
            row["compile_ms"], row["compile_min_ms"], compiled_output = time_runs(
                compiled, inputs, device, args.iterations)
            row["compile_err"], row["compile_ok"] = compare_scaled(compiled_output, reference)
        except Exception as error:  # noqa: BLE001 - any failure of the compiler is a result
            row["compile_error"] = "failed: " + first_line(error)
    return row


def fmt_ms(value):
    return "—" if value is None else (f"{value:.3f}" if value < 10 else f"{value:.1f}")


def fmt_ratio(torch_ms, kiln_ms):
    return "—" if torch_ms is None or not kiln_ms else f"{torch_ms / kiln_ms:.2f}x"


def table_rows(rows):
    header = ["model", "batch", "kiln ms", "eager ms", "compile ms", "eager/kiln",
              "compile/kiln", "max abs err", "max rel err", "outputs"]
    lines = []
    for r in rows:
        outputs = ("error: " + r["kiln_error"]) if "kiln_error" in r else (
            "match" if r.get("ok") else "**MISMATCH**")
        compile_cell = fmt_ms(r.get("compile_ms")) if "compile_ms" in r else r.get(
            "compile_error", "—")
        if r.get("compile_note"):
            compile_cell += f" ({r['compile_note']})"
        lines.append([r["model"], str(r["batch"]), fmt_ms(r.get("kiln_ms")),
                      fmt_ms(r.get("eager_ms")), compile_cell,
                      fmt_ratio(r.get("eager_ms"), r.get("kiln_ms")),
                      fmt_ratio(r.get("compile_ms"), r.get("kiln_ms")),
                      f"{r['max_abs']:.2e}" if "max_abs" in r else "—",
                      f"{r['max_rel']:.2e}" if "max_rel" in r else "—", outputs])
    return header, lines


def fmt_err(row, key):
    """An error over its scale, marked "(beyond)" past the bf16-mixed tolerance."""
    if key not in row:
        return "—"
    return f"{row[key]:.2e}" + ("" if row[key] <= BF16_MIXED_TOL else " (beyond)")


def table_rows_bf16_mixed(rows):
    header = ["model", "batch", "kiln ms", "autocast eager ms", "autocast compile ms",
              "eager/kiln", "compile/kiln", "kiln err", "eager autocast err",
              "compile autocast err", "kiln outputs"]
    lines = []
    for r in rows:
        outputs = ("error: " + r["kiln_error"]) if "kiln_error" in r else (
            "match" if r.get("ok") else "**MISMATCH**")
        eager_cell = fmt_ms(r["eager_ms"]) if "eager_ms" in r else r.get("eager_error", "—")
        compile_cell = fmt_ms(r["compile_ms"]) if "compile_ms" in r else r.get(
            "compile_error", "—")
        lines.append([r["model"], str(r["batch"]), fmt_ms(r.get("kiln_ms")), eager_cell,
                      compile_cell, fmt_ratio(r.get("eager_ms"), r.get("kiln_ms")),
                      fmt_ratio(r.get("compile_ms"), r.get("kiln_ms")),
                      fmt_err(r, "kiln_err"), fmt_err(r, "eager_err"),
                      fmt_err(r, "compile_err"), outputs])
    return header, lines


def print_table(header, lines):
    widths = [max(len(h), *(len(line[i]) for line in lines)) if lines else len(h)
              for i, h in enumerate(header)]
    print("  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(header, widths))))
    print("-" * (sum(widths) + 2 * (len(widths) - 1)))
    for line in lines:
        print("  ".join(c.ljust(w) if i == 0 else c.rjust(w)
                        for i, (c, w) in enumerate(zip(line, widths))))


def current_commit(given):
    if given:
        return given
    if os.environ.get("KILN_BENCH_COMMIT"):
        return os.environ["KILN_BENCH_COMMIT"]
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        return commit + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def device_description(device):
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "cpu"


def device_line(args, description):
    if args.device == "cuda":
        return f"- device: {description} (CUDA {torch.version.cuda}, driver via PyTorch)"
    return f"- device: {description}, {torch.get_num_threads()} threads each side"


def kiln_flags_text(args):
    return "".join(" " + flag for flag in args.kiln_flag_list)


def report_header_fp32(args, description, date, commit, triton_version):
    return [
        f"# kiln vs PyTorch, end-to-end inference on {description}, {date:%Y-%m-%d}",
        "",
        device_line(args, description),
        f"- date: {date:%Y-%m-%d %H:%M UTC}",
        f"- kiln: commit {commit}, `kiln run --target {args.kiln_target}{kiln_flags_text(args)}`"
        + (f" (backend {args.backend})" if args.device == "cuda" else ""),
        f"- PyTorch {torch.__version__}, Triton {triton_version}; fp32, TF32 off "
        "(torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False); "
        "torch.compile in its default mode",
        f"- time per run: median of {args.iterations} runs after {WARMUP_RUNS} warm-up runs "
        "(kiln: after one untimed run); each run copies the inputs from the host, runs the "
        "model and copies the output back, as `kiln run` does; the weights stay on the device",
        "- eager/kiln and compile/kiln: PyTorch's time over kiln's (above 1.00x kiln is faster)",
        f"- outputs: kiln's against the eager twin's, |kiln - twin| <= {ABS_TOL} * max(1, max|twin|)"
        f" + {REL_TOL} * |twin| element by element; max rel err = max |kiln - twin| / "
        f"(|twin| + {ABS_TOL} * scale)",
    ]


def report_header_bf16_mixed(args, description, date, commit, triton_version):
    reduced = ""
    if args.device == "cuda":
        reduced = ("; torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = "
                   f"{torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction} "
                   "(PyTorch's default, left as is)")
    lines = [
        f"# kiln vs PyTorch, end-to-end inference in bf16-mixed on {description}, "
        f"{date:%Y-%m-%d}",
        "",
        device_line(args, description),
        f"- date: {date:%Y-%m-%d %H:%M UTC}",
        f"- kiln: commit {commit}, `kiln run --target {args.kiln_target} --precision bf16-mixed"
        f"{kiln_flags_text(args)}`"
        + (f" (backend {args.backend})" if args.device == "cuda" else "")
        + ": every matmul and conv2d takes bf16 operands, accumulates in f32 and rounds its "
        "result to bf16; everything else (bias, activations, norms, softmax, pooling) in f32; "
        "inputs, weights and outputs f32",
        f"- PyTorch {torch.__version__}, Triton {triton_version}: the twin's forward under "
        f"`torch.autocast(\"{args.device}\", dtype=torch.bfloat16)`, eager and torch.compile "
        "(default mode, compiling the autocast-wrapped forward); the ops autocast leaves in fp32 "
        "run with TF32 off (torch.backends.cuda.matmul.allow_tf32 = "
        "torch.backends.cudnn.allow_tf32 = False)" + reduced,
        f"- time per run: median of {args.iterations} runs after {WARMUP_RUNS} warm-up runs "
        "(kiln: after one untimed run); each run copies the inputs from the host, runs the "
        "model and copies the output back, as `kiln run` does; the weights stay on the device "
        "in fp32 on both sides (kiln narrows its weights to bf16 in every run, as eager "
        "autocast does)",
        "- eager/kiln and compile/kiln: PyTorch's autocast time over kiln's bf16-mixed time "
        "(above 1.00x kiln is faster)",
        "- errors: against the fp32 eager twin (TF32 off), max |out - ref| / max |ref| over the "
        f"output; within tolerance when <= 2^-5 = {BF16_MIXED_TOL:.4g} (kiln's bf16-mixed "
        "tolerance, docs/precision.md), for kiln and for PyTorch's autocast alike; \"(beyond)\" "
        "marks an error over it. kiln outputs: \"match\" when kiln's is within it (an autocast "
        "error beyond it is reported, not a failure)",
    ]
    if args.autocast_unavailable:
        lines.append(f"- autocast columns skipped: {args.autocast_unavailable}")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--kiln", default="build/release/kiln", help="the kiln executable")
    parser.add_argument("--models", default=",".join(TWINS),
                        help=f"comma-separated subset of {','.join(TWINS)}")
    parser.add_argument("--batch", type=int, default=0,
                        help="batch of every model (default: each example's default)")
    parser.add_argument("--iterations", type=int, default=0,
                        help="timed runs per side (default: 50 on cuda, 10 on cpu)")
    parser.add_argument("--backend", default="llvm", choices=["llvm", "nvrtc"],
                        help="kiln's GPU backend")
    parser.add_argument("--precision", default="fp32", choices=["fp32", "bf16-mixed"],
                        help="fp32 (TF32 off) both sides, or kiln's bf16-mixed policy "
                        "against torch.autocast bfloat16 (default fp32)")
    parser.add_argument("--kiln-flags", default="",
                        help="more flags of every `kiln run`, space-separated, e.g. "
                        "\"--tma\" (named in the report and its file name)")
    parser.add_argument("--kiln-timeout", type=float, default=300,
                        help="seconds one `kiln run` may take before it is stopped and its row "
                        "reports it (0: no limit; default 300)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=0, help="cpu: threads for both sides")
    parser.add_argument("--out", default="bench/results", help="where the report goes")
    parser.add_argument("--no-report", action="store_true", help="print the table only")
    parser.add_argument("--commit", default="", help="the commit to name in the report")
    args = parser.parse_args()
    args.iterations = args.iterations or (50 if args.device == "cuda" else 10)
    args.kiln_target = args.device
    args.kiln_flag_list = args.kiln_flags.split()

    if args.device == "cuda" and not torch.cuda.is_available():
        print("torch_gpu.py: PyTorch sees no CUDA device", file=sys.stderr)
        return 77
    device = torch.device(args.device)
    # fp32 on both sides: kiln's GPU matmuls and convs are fp32 on the CUDA cores. Under
    # bf16-mixed, too, for the reference and for every op autocast leaves in fp32.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    args.autocast_unavailable = (autocast_unavailable(device)
                                 if args.precision == "bf16-mixed" else None)
    if args.device == "cpu":
        threads = args.threads or int(os.environ.get("KILN_NUM_THREADS", "0") or 0) or os.cpu_count()
        torch.set_num_threads(threads)
        os.environ["KILN_NUM_THREADS"] = str(threads)
    names = [name for name in args.models.split(",") if name]
    unknown = [name for name in names if name not in TWINS]
    if unknown:
        parser.error(f"unknown model(s) {unknown}; the twins are {list(TWINS)}")

    bf16_mixed = args.precision == "bf16-mixed"
    report_path = None if args.no_report else new_report_path(args, device)
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for name in names:
            print(f"torch_gpu.py: {name}", file=sys.stderr, flush=True)
            rows.append(bench_model(args, TWINS[name], device, work))
            if report_path:  # after each model: a run stopped from outside keeps the rows done
                write_report(args, device, rows, report_path, finished=len(rows) == len(names))
    header, lines = (table_rows_bf16_mixed if bf16_mixed else table_rows)(rows)
    print_table(header, lines)
    if bf16_mixed and args.autocast_unavailable:
        print(f"autocast columns skipped: {args.autocast_unavailable}")
    if report_path:
        print(f"written to {report_path}", file=sys.stderr)
    failed = any("kiln_error" in r or not r.get("ok") for r in rows)
    return 1 if failed else 0


def new_report_path(args, device):
    """bench/results/e2e-<device>-<date>-<commit>[-bf16-mixed][-<flags>][-N].md, not yet taken."""
    commit = current_commit(args.commit)
    date = datetime.datetime.now(datetime.timezone.utc)
    description = device_description(device)
    slug = re.sub(r"[^a-z0-9]+", "-", description.lower()).strip("-") if args.device == "cuda" else "cpu"
    stem = f"e2e-{slug}-{date:%Y-%m-%d}-{commit}" + (
        "-bf16-mixed" if args.precision == "bf16-mixed" else "")
    # "--tma --backend nvrtc" -> "-tma-backend-nvrtc": runs with other flags keep their own file.
    stem += "".join("-" + re.sub(r"[^a-z0-9]+", "-", flag.lower()).strip("-")
                    for flag in args.kiln_flag_list)
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, f"{stem}.md")
    n = 2
    while os.path.exists(path):
        path = os.path.join(args.out, f"{stem}-{n}.md")
        n += 1
    return path


def write_report(args, device, rows, path, finished):
    """The report of the rows so far, written beside `path` and then renamed over it."""
    bf16_mixed = args.precision == "bf16-mixed"
    header, lines = (table_rows_bf16_mixed if bf16_mixed else table_rows)(rows)
    commit = current_commit(args.commit)
    date = datetime.datetime.now(datetime.timezone.utc)
    description = device_description(device)
    try:
        import triton  # noqa: F401 - only its version is reported
        triton_version = triton.__version__
    except ImportError:
        triton_version = "not installed"
    header_lines = report_header_bf16_mixed if bf16_mixed else report_header_fp32
    report = header_lines(args, description, date, commit, triton_version)
    if not finished:
        report.append("- **unfinished**: written after the last model below; the run had not "
                      "ended (stopped from outside, or still running)")
    report += [
        "",
        "| " + " | ".join(header) + " |",
        "|---|" + "---:|" * (len(header) - 2) + ":---:|",
    ]
    report += ["| " + " | ".join(cell.replace("|", "\\|") for cell in line) + " |" for line in lines]
    with open(path + ".partial", "w") as f:
        f.write("\n".join(report) + "\n")
    os.replace(path + ".partial", path)


if __name__ == "__main__":
    sys.exit(main())
