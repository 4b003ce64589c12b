#!/usr/bin/env python3
# Joins the JSON lines of kiln_cpu_bench and torch_cpu.py into the Markdown
# report of bench/run_cpu_bench.sh: kiln against the libraries (OpenBLAS,
# oneDNN, the machine's fp32 peak), kiln against PyTorch, and the compile time
# and memory table. The goals are bench/README.md's.
import argparse
import json
import sys

GOAL = 1.0  # kiln at least as fast as PyTorch (its faster path), OpenBLAS and oneDNN
PEAK_GOAL = 0.85  # matmul of 1024 and above: at least this share of the fp32 peak


def read_records(paths):
    records = []
    for path in paths:
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line.startswith("{"):
                    records.append(json.loads(line))
    return records


def ms(value):
    if value is None:
        return "—"
    return f"{value:.3f}" if value < 10 else f"{value:.1f}"


def gflops(record):
    if not record or not record.get("flops"):
        return None
    return record["flops"] / (record["median_ms"] * 1e-3) / 1e9


def fmt_gflops(value):
    return "—" if value is None else f"{value:.1f}"


def ratio(kiln, other):
    """kiln's speed over the other's (>1: kiln is faster), from the medians."""
    if not kiln or not other:
        return None
    return other["median_ms"] / kiln["median_ms"]


def fmt_ratio(value):
    return "—" if value is None else f"{value:.2f}x"


def goal(value):
    if value is None:
        return "n/a"
    return "ok" if value >= GOAL else "**MISSED**"


def time_table(records):
    times = {}
    order = []
    errors = {}
    for r in records:
        if r["kind"] == "time":
            if r["workload"] not in order:
                order.append(r["workload"])
            times[(r["impl"], r["workload"])] = r
        elif r["kind"] == "error" and not r["workload"].startswith("compile "):
            errors[r["workload"]] = r["message"]
            if r["workload"] not in order:
                order.append(r["workload"])
    lines = [
        "| workload | kiln ms (min) | torch ms (min) | kiln/torch | goal >= 1x "
        "| torch+oneDNN ms (min) | kiln/(torch+oneDNN) | goal vs best torch "
        "| kiln GFLOP/s | torch GFLOP/s | torch+oneDNN GFLOP/s | kiln output |",
        "|---|---:|---:|---:|:---:|---:|---:|:---:|---:|---:|---:|:---:|",
    ]
    for name in order:
        kiln = times.get(("kiln", name))
        torch = times.get(("torch", name))
        onednn = times.get(("torch_onednn", name))

        def cell(r):
            return "—" if not r else f"{ms(r['median_ms'])} ({ms(r['min_ms'])})"

        kiln_cell = cell(kiln) if kiln else f"error: {errors.get(name, 'missing')[:80]}"
        best = min((r for r in (torch, onednn) if r), key=lambda r: r["median_ms"], default=None)
        lines.append(
            f"| {name} | {kiln_cell} | {cell(torch)} | {fmt_ratio(ratio(kiln, torch))} "
            f"| {goal(ratio(kiln, torch))} | {cell(onednn)} | {fmt_ratio(ratio(kiln, onednn))} "
            f"| {goal(ratio(kiln, best))} | {fmt_gflops(gflops(kiln))} "
            f"| {fmt_gflops(gflops(torch))} | {fmt_gflops(gflops(onednn))} "
            f"| {kiln.get('check', '?') if kiln else '—'} |")
    return "\n".join(lines)


def library_table(records):
    """kiln against OpenBLAS and oneDNN on the matmul and conv rows, with its share of the
    machine's peak."""
    times = {(r["impl"], r["workload"]): r for r in records if r["kind"] == "time"}
    info = next((r for r in records if r["kind"] == "info" and r["impl"] == "baselines"), {})
    peak = info.get("peak_gflops")
    order = [r["workload"] for r in records
             if r["kind"] == "time" and r["impl"] == "kiln"
             and r["workload"].startswith(("matmul", "conv"))]
    lines = [
        "| workload | kiln ms | OpenBLAS ms | kiln/OpenBLAS | oneDNN ms | oneDNN reorders ms "
        "| kiln nhwc ms | kiln nhwc/oneDNN | kiln/oneDNN | kiln/(oneDNN+reorders) "
        "| kiln GFLOP/s | kiln % of peak | goal |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|:---:|",
    ]
    for name in order:
        kiln = times.get(("kiln", name))
        nhwc = times.get(("kiln_nhwc", name))
        blas = times.get(("openblas", name))
        dnn = times.get(("onednn", name))
        reorders = times.get(("onednn_reorders", name))
        with_reorders = None
        if dnn and reorders:
            with_reorders = {"median_ms": dnn["median_ms"] + reorders["median_ms"]}
        # A convolution's goal holds the faster of kiln's two layouts to oneDNN in its own.
        kernel = min((r for r in (kiln, nhwc) if r), key=lambda r: r["median_ms"], default=None)
        share = gflops(kernel) / peak if peak and gflops(kernel) else None
        if name.startswith("matmul"):
            checks = [ratio(kiln, blas)]
            size = name.split("_")[-1]
            if size.isdigit() and int(size) >= 1024:
                checks.append(share / PEAK_GOAL if share is not None else None)
        else:
            checks = [ratio(kernel, dnn)]
        verdict = ("n/a" if any(c is None for c in checks)
                   else "ok" if all(c >= GOAL for c in checks) else "**MISSED**")
        bad = [r["impl"] for r in (kiln, nhwc, blas, dnn)
               if r and r.get("check") not in ("ok", None)]
        if bad:
            verdict += f" (wrong output: {', '.join(bad)})"

        def cell(r):
            return "—" if not r else ms(r["median_ms"])

        lines.append(
            f"| {name} | {cell(kiln)} | {cell(blas)} | {fmt_ratio(ratio(kiln, blas))} "
            f"| {cell(dnn)} | {cell(reorders)} | {cell(nhwc)} | {fmt_ratio(ratio(nhwc, dnn))} "
            f"| {fmt_ratio(ratio(kiln, dnn))} | {fmt_ratio(ratio(kiln, with_reorders))} "
            f"| {fmt_gflops(gflops(kernel))} | {'—' if share is None else f'{share:.0%}'} "
            f"| {verdict} |")
    return "\n".join(lines)


def mib(n):
    return f"{n / 2**20:.2f}"


def compile_table(records):
    lines = [
        "| model | batch | groups | kernels | graph passes s | lowering s | codegen s | total s "
        "| arena planned MiB | unplanned MiB | planned/unplanned | constants MiB | params MiB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in records:
        if r["kind"] == "compile":
            share = (f"{r['arena_bytes'] / r['unplanned_bytes']:.0%}"
                     if r["unplanned_bytes"] else "—")
            lines.append(
                f"| {r['model']} | {r['batch']} | {r['groups']} | {r['kernels']} "
                f"| {r['graph_s']:.3f} | {r['lowering_s']:.3f} | {r['codegen_s']:.3f} "
                f"| {r['total_s']:.3f} | {mib(r['arena_bytes'])} | {mib(r['unplanned_bytes'])} "
                f"| {share} | {mib(r['constant_bytes'])} | {mib(r['param_bytes'])} |")
        elif r["kind"] == "error" and r["workload"].startswith("compile "):
            lines.append(f"| {r['workload'][len('compile '):]} | | | | | | | "
                         f"| compile failed: {r['message'][:100]} | | | | |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--header", required=True, help="Markdown header lines (a file)")
    parser.add_argument("records", nargs="+", help="JSON-lines files")
    args = parser.parse_args()
    records = read_records(args.records)
    with open(args.header) as f:
        header = f.read().rstrip("\n")
    missed = [r for r in records if r["kind"] == "error"]
    schedules = [r for r in records if r["kind"] == "time" and r.get("schedules")]
    print(header)
    print()
    info = next((r for r in records if r["kind"] == "info" and r["impl"] == "baselines"), None)
    if info:
        print("## kiln against the libraries")
        print()
        print(f"- CPU: {info['cpu']}, {info['isa']}; measured fp32 peak "
              f"{info['peak_gflops']:.1f} GFLOP/s with {info['peak_threads']} threads "
              "(independent FMA chains on every thread)")
        print(f"- OpenBLAS: {info['openblas']} ({info['openblas_env']})")
        print(f"- oneDNN: {info['onednn']}; convolutions on the layouts and algorithm oneDNN "
              "picks (its primitive named in the schedules table), the reorders from and to "
              "NCHW timed apart")
        print()
        print("kiln/X is X's median time over kiln's (above 1.00x kiln is faster). Goals: "
              "matmul >= 1.0x OpenBLAS, and >= 85% of peak at 1024 and above; conv2d >= 1.0x "
              "oneDNN (without its reorders), each side in the faster of its layouts: \"kiln\" is "
              "the convolution built in NCHW, which kiln keeps for a convolution on its own "
              "(Winograd where its rule takes the layer); \"kiln nhwc\" is the same convolution "
              "built in NHWC, the layout kiln's CPU pipeline gives convolutions that feed one "
              "another (the layout-cpu pass). GFLOP/s and the share of peak are the faster "
              "one's.")
        print()
        print(library_table(records))
        print()
    print("## Time per run (median of the timed runs, min in parentheses)")
    print()
    print("kiln/torch is PyTorch's median time over kiln's: above 1.00x kiln is faster. "
          "The goal is kiln/torch >= 1.0x; \"goal vs best torch\" holds kiln to the faster of "
          "the two PyTorch paths. GFLOP/s are from the median time. \"kiln output\" checks "
          "the last timed run's result (sampled fp64 sums for matmul and conv, the reference "
          "interpreter for the models).")
    print()
    print(time_table(records))
    print()
    print("## Schedules: kiln's (the heuristic defaults, one per kernel) and oneDNN's primitives")
    print()
    print("| workload | impl | schedules |")
    print("|---|---|---|")
    for r in schedules:
        print(f"| {r['workload']} | {r['impl']} | {r['schedules']} |")
    print()
    print("## Compile time and memory (compile only, nothing runs)")
    print()
    print(compile_table(records))
    if missed:
        print()
        print(f"{len(missed)} workload(s) failed; see the error cells above.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
