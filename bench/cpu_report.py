#!/usr/bin/env python3
# Joins the JSON lines of kiln_cpu_bench and torch_cpu.py into the Markdown
# report of bench/run_cpu_bench.sh: the side-by-side time table (with the
# >= 0.5x-of-PyTorch goal) and the compile time and memory table.
import argparse
import json
import sys

GOAL = 0.5  # kiln must run at least at half PyTorch's speed


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
        "| workload | kiln ms (min) | torch ms (min) | kiln/torch | goal >= 0.5x "
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
    print("## Time per run (median of the timed runs, min in parentheses)")
    print()
    print("kiln/torch is PyTorch's median time over kiln's: above 1.00x kiln is faster. "
          "The goal is kiln/torch >= 0.5x; \"goal vs best torch\" holds kiln to the faster of "
          "the two PyTorch paths. GFLOP/s are from the median time. \"kiln output\" checks "
          "the last timed run's result (sampled fp64 sums for matmul and conv, the reference "
          "interpreter for the models).")
    print()
    print(time_table(records))
    print()
    print("## kiln's schedules (the heuristic defaults, one per kernel)")
    print()
    print("| workload | schedules |")
    print("|---|---|")
    for r in schedules:
        print(f"| {r['workload']} | {r['schedules']} |")
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
