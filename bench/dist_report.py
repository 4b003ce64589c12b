#!/usr/bin/python3
"""The data-parallel benchmark's report (bench/README.md, "Data parallel"): reads the runs
bench/run_dist_bench.sh made (one JSON line each: recipe, ranks, threads, bucket caps, the
rank-0 log of `kiln train`, the traces) and prints the markdown tables.

usage: dist_report.py --warmup N --header-json FILE RUNS.jsonl

Throughput is the median over the measured windows (epochs after the first N) of the samples/s
that rank 0's epoch line reports: the global batch's samples, so N ranks' figure is the whole
job's. Scaling efficiency = samples/s / (workers x samples/s of 1 rank x 1 thread), workers
being ranks x threads, the cores the run asks for."""
import argparse
import json
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dist_trace  # noqa: E402  (beside this file)

# kiln train's epoch line (examples/models/RecipeTraining.cpp, drawProgress), once an epoch
# on a log: "epoch 2/6 [=====] 40/40 loss 0.8849 acc 67.58% 1254 samples/s | test ...".
EPOCH_LINE = re.compile(r"epoch (\d+)/(\d+) \[[= ]*\] (\d+)/(\d+) .*? ([0-9.]+) samples/s")


def epoch_throughputs(text):
    """{epoch: samples/s} from a log; a terminal's mid-epoch redraws are overwritten by the
    epoch's last line, which is the one kept."""
    found = {}
    for line in text.replace("\r", "\n").splitlines():
        match = EPOCH_LINE.search(line)
        if match and match.group(3) == match.group(4):  # the epoch's end
            found[int(match.group(1))] = float(match.group(5))
    return found


def measure(run, warmup):
    """The run's measured windows and their median, or the reason there are none."""
    try:
        with open(run["log"]) as log:
            text = log.read()
    except OSError as error:
        return {"error": f"no log ({error})"}
    windows = [v for epoch, v in sorted(epoch_throughputs(text).items()) if epoch > warmup]
    if run.get("status", 0) != 0 or not windows:
        last = [line for line in text.splitlines() if "error" in line]
        return {"error": f"failed (exit {run.get('status')}): "
                         f"{last[-1].strip() if last else 'no epoch line'}"}
    return {"windows": windows, "median": statistics.median(windows)}


def hidden(run):
    """The run's all-reduce time hidden behind compute: dist_trace's summary of its traces, or
    the reason there is none."""
    if run["ranks"] == 1:
        return {"hidden": None, "reason": "one rank: nothing to reduce"}
    if run.get("trace_reason"):
        return {"hidden": None, "reason": dist_trace.NO_COMM_TRACK, "why": run["trace_reason"]}
    try:
        return dist_trace.summarize([p for p in run.get("traces", []) if os.path.exists(p)])
    except dist_trace.TraceError as error:
        return {"hidden": None, "reason": f"unreadable trace: {error}"}


def hidden_text(h):
    if h.get("hidden") is None:
        return "—" if h["reason"].startswith("one rank") else f"n/a ({h['reason']})"
    text = f"{100 * h['hidden']:.0f}% of {h['comm_ms']:.1f} ms ({h['collectives']} all-reduces)"
    buckets = h.get("buckets", {})
    if len(buckets) > 1:  # the bucket that hides least: the one to look at
        name, least = min(buckets.items(), key=lambda item: item[1]["hidden"])
        text += f"; least hidden: {name.removeprefix('all_reduce ')} at {100 * least['hidden']:.0f}%"
    return text


def mib(value, default):
    return f"{default} (default)" if value is None else f"{value:g}"


def config_name(run):
    return f"{run['ranks']} rank{'s' if run['ranks'] > 1 else ''} x {run['threads']} " \
           f"thread{'s' if run['threads'] > 1 else ''}"


def throughput_text(m):
    if "error" in m:
        return m["error"], "—"
    spread = f"{min(m['windows']):.0f}..{max(m['windows']):.0f}"
    return f"{m['median']:.0f}", spread


def recipe_section(recipe, runs, warmup, cores):
    lines = [f"### {recipe}", ""]
    scaling = [r for r in runs if r["role"] == "scaling"]
    measured = {(r["ranks"], r["threads"]): measure(r, warmup) for r in scaling}
    base = measured.get((1, 1), {}).get("median")
    lines += ["| configuration | samples/s (median) | windows (min..max) | scaling efficiency "
              "| all-reduce hidden behind compute | note |",
              "|---|---:|---|---:|---|---|"]
    for run in scaling:
        m = measured[(run["ranks"], run["threads"])]
        value, spread = throughput_text(m)
        workers = run["ranks"] * run["threads"]
        efficiency = "—"
        if base and "median" in m and workers > 1:
            efficiency = f"{100 * m['median'] / (workers * base):.0f}%"
        elif base and "median" in m:
            efficiency = "100% (the base)"
        note = []
        if workers > cores:
            note.append(f"oversubscribed: {workers} workers on {cores} cores")
        if run["ranks"] > 1:
            note.append("bound to one core each" if run.get("bound") else "not bound to cores")
        elif run.get("bound"):
            note.append("pinned to one core (taskset)")
        lines.append(f"| {config_name(run)} | {value} | {spread} | {efficiency} | "
                     f"{hidden_text(hidden(run))} | {'; '.join(note)} |")
    two_ranks, two_threads = measured.get((2, 1), {}), measured.get((1, 2), {})
    if "median" in two_ranks and "median" in two_threads:
        ratio = two_ranks["median"] / two_threads["median"]
        lines += ["", f"2 ranks x 1 thread against 1 rank x 2 threads (the same two cores): "
                      f"**{ratio:.2f}x** ({two_ranks['median']:.0f} against "
                      f"{two_threads['median']:.0f} samples/s)."]
    sweep = [r for r in runs if r["role"] == "sweep"]
    if sweep:
        lines += ["", f"Bucket caps swept, 2 ranks x 1 thread (`--first-bucket-mib`, "
                      f"`--bucket-mib`; default 1 and 25 MiB):", "",
                  "| first bucket MiB | bucket MiB | samples/s (median) | windows (min..max) "
                  "| against the default caps | all-reduce hidden behind compute |",
                  "|---:|---:|---:|---|---:|---|"]
        default = two_ranks.get("median")
        rows = [(run, measure(run, warmup)) for run in sweep]
        default_run = next((r for r in scaling if (r["ranks"], r["threads"]) == (2, 1)), None)
        if default_run:
            rows.insert(0, (default_run, two_ranks))
        for run, m in rows:
            value, spread = throughput_text(m)
            against = f"{m['median'] / default:.2f}x" if default and "median" in m else "—"
            lines.append(f"| {mib(run['first_mib'], 1)} | {mib(run['bucket_mib'], 25)} | {value} "
                         f"| {spread} | {against} | {hidden_text(hidden(run))} |")
    whys = sorted({hidden(r).get("why") for r in runs} - {None})
    if whys:
        lines += ["", f"All-reduce hidden: {'; '.join(whys)}."]
    return lines


def report(runs, warmup, header):
    cores = header.get("cores", os.cpu_count() or 1)
    lines = [f"# Data-parallel training on the CPU, {header.get('date', '')}", ""]
    for key, label in (("when", "date"), ("machine", "machine"), ("commit", "kiln"),
                       ("load", "load average (1/5/15 min)"), ("settings", "settings"),
                       ("note", "note")):
        if header.get(key):
            lines.append(f"- {label}: {header[key]}")
    lines += ["", f"Throughput: samples/s of the global batch in each window (an epoch of "
                  f"`kiln train`, rank 0's clock), after {warmup} warm-up window(s); the median "
                  f"and the spread of the windows. Scaling efficiency: samples/s over workers x "
                  f"1 rank x 1 thread's (workers = ranks x threads). On {cores} cores, 2 ranks "
                  f"x 1 thread and 1 rank x 2 threads use the same cores: their ratio says "
                  f"whether splitting the batch across processes (and reducing gradients) beats "
                  f"splitting each kernel across threads. Efficiency with more workers than "
                  f"cores measures the oversubscription, not the all-reduce.", ""]
    for recipe in dict.fromkeys(r["recipe"] for r in runs):
        lines += recipe_section(recipe, [r for r in runs if r["recipe"] == recipe], warmup, cores)
        lines.append("")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--header-json", required=True)
    parser.add_argument("runs")
    args = parser.parse_args()
    with open(args.header_json) as source:
        header = json.load(source)
    with open(args.runs) as source:
        runs = [json.loads(line) for line in source if line.strip()]
    print(report(runs, args.warmup, header))
    failed = [r for r in runs if "error" in measure(r, args.warmup)]
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
