#!/usr/bin/python3
"""Joins kiln_train_bench's and torch_train.py's JSON lines into the training
benchmark's markdown table (bench/README.md, "Training").

usage: train_report.py --header FILE KILN.jsonl TORCH.jsonl [--kiln-cpu KILN_CPU.jsonl]

Speed ratios are the other side's step time over kiln's: above 1, kiln is faster.
--kiln-cpu adds kiln on the CPU, from the same run, and the GPU's speed-up over it."""
import argparse
import json
import sys


def read(path):
    rows = []
    if not path:
        return rows
    with open(path) as lines:
        for line in lines:
            line = line.strip()
            if line.startswith("{"):
                rows.append(json.loads(line))
    return rows


def by_workload(rows, impl, kinds=("train", "na", "error")):
    return {r["workload"]: r for r in rows if r.get("impl") == impl and r.get("kind") in kinds}


def ms(row):
    if row is None:
        return "—"
    if row.get("kind") == "na":
        return row.get("reason", "n/a")
    if row.get("kind") == "error":
        return "failed"
    return f"{row['median_ms']:.2f} (min {row['min_ms']:.2f})"


def ratio(other, kiln):
    if not other or not kiln or other.get("kind") != "train" or kiln.get("kind") != "train":
        return "—"
    return f"{other['median_ms'] / kiln['median_ms']:.2f}x"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--header", required=True)
    parser.add_argument("--kiln-cpu", default="")
    parser.add_argument("kiln")
    parser.add_argument("torch")
    args = parser.parse_args()
    kiln_rows, torch_rows, cpu_rows = read(args.kiln), read(args.torch), read(args.kiln_cpu)
    kiln = by_workload(kiln_rows, "kiln")
    kiln_cpu = by_workload(cpu_rows, "kiln")
    eager = by_workload(torch_rows, "torch_eager")
    compiled = by_workload(torch_rows, "torch_compile")
    order = list(dict.fromkeys(list(kiln) + list(eager)))

    with open(args.header) as header:
        sys.stdout.write(header.read())
    print()
    columns = ["workload", "kiln step ms", "kiln samples/s", "torch eager ms",
               "kiln/torch eager", "torch.compile ms", "kiln/torch.compile", "kiln compile s"]
    if args.kiln_cpu:
        columns += ["kiln CPU step ms", "GPU/CPU speed-up"]
    print("| " + " | ".join(columns) + " |")
    print("|---|" + "---:|" * (len(columns) - 1))
    for name in order:
        k = kiln.get(name)
        trained = k is not None and k.get("kind") == "train"
        cells = [name, ms(k),
                 f"{k['samples_per_s']:.0f}" if trained else "—",
                 ms(eager.get(name)), ratio(eager.get(name), k),
                 ms(compiled.get(name)), ratio(compiled.get(name), k),
                 f"{k['compile_s']:.2f}" if trained else "—"]
        if args.kiln_cpu:
            cells += [ms(kiln_cpu.get(name)), ratio(kiln_cpu.get(name), k)]
        print("| " + " | ".join(cells) + " |")
    print()
    print("Step times are medians (minimum in brackets) of one training step, in ms; "
          "kiln/torch columns are PyTorch's median over kiln's (above 1: kiln is faster). "
          "kiln compile s is Trainer::create (autodiff, optimizer, compile of the step).")
    compile_times = [f"{name} {r['compile_s']:.1f} s" for name, r in compiled.items()
                     if r.get("kind") == "train" and "compile_s" in r]
    if compile_times:
        print("torch.compile's first step (its compile): " + ", ".join(compile_times) + ".")
    print()
    print("## Checks before timing")
    print()
    for name in order:
        for label, rows in (("kiln", kiln), ("kiln CPU", kiln_cpu)):
            r = rows.get(name)
            if r is None:
                continue
            text = r.get("check") if r.get("kind") == "train" else "FAILED: " + r.get("message", "")
            print(f"- {name}, {label}: {text}")
        e = eager.get(name)
        if e and e.get("kind") == "train":
            print(f"- {name}, torch eager: fresh loss {e['first_loss']:.4f} "
                  f"(log classes {e['uniform_loss']:.4f}), last step's loss {e['last_loss']:.4f}")
        elif e:
            print(f"- {name}, torch eager: FAILED: {e.get('message', '')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
