#!/usr/bin/python3
"""Imports each ONNX test model with `kiln run`, runs it on the CPU (and, for the names given
with --sim, on the simulator) on the input PyTorch saw, and compares with PyTorch's output:
max |kiln - torch| <= 1e-4 * max |torch| (f32). A model whose only open dim is the batch also
runs as "cpu-sym": imported with the batch a size symbol over [1, 2 * batch + 1], compiled
once with kernels that read the batch at run time (docs/dynamic-shapes.md), and run at the
batch PyTorch saw, inside that range.

Usage: check_onnx_models.py KILN FIXTURE_DIR [--sim NAME,...] [NAME...]
The fixtures are exported first (export_models.py), or reused when FIXTURE_DIR holds an
export by the same export_models.py. Exits 77 (skipped) without torch, torchvision or onnx.
"""
import hashlib
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
RELATIVE_TOLERANCE = 1e-4
# cpu-sym models the importer refuses, and the refusal expected (a pass means: remove it here).
SYMBOLIC_REFUSED = {}


def export_fixtures(fixtures, names):
    script = os.path.join(HERE, "export_models.py")
    with open(script, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()
    stamp = os.path.join(fixtures, "export.sha256")
    if os.path.exists(stamp) and open(stamp).read() == digest:
        return 0
    result = subprocess.run([sys.executable, script, fixtures] + names)
    if result.returncode == 0 and not names:
        with open(stamp, "w") as f:
            f.write(digest)
    return result.returncode


def symbolic_batch(entry):
    """The batch's dim_param when every open dim of the model is an input's leading dim and
    they share one name, else None."""
    names = {axes.get("0") for axes in entry["dynamic"].values()}
    only_batch = all(list(axes) == ["0"] for axes in entry["dynamic"].values())
    return names.pop() if entry["dynamic"] and only_batch and len(names) == 1 else None


def run_model(kiln, fixtures, name, entry, target):
    import numpy as np
    # On the simulator a model with a small input set (sim_inputs) runs on that one.
    small = target == "sim" and "sim_inputs" in entry
    prefix = f"{name}.sim" if small else name
    input_shapes = entry["sim_inputs"] if small else entry["inputs"]
    if target == "cpu-sym":
        batch = next(iter(input_shapes.values()))[0]
        shapes = [f"--shape={symbolic_batch(entry)}=1..{2 * batch + 1}", "--size-buckets", "none"]
        target = "cpu"
    else:
        shapes = [f"--shape={key}={','.join(map(str, shape))}"
                  for key, shape in input_shapes.items() if entry["dynamic"].get(key)]
    inputs = ",".join(f"{key}={os.path.join(fixtures, f'{prefix}.in.{key}.npy')}"
                      for key in input_shapes)
    with tempfile.TemporaryDirectory() as out:
        command = [kiln, "run", os.path.join(fixtures, f"{name}.onnx"), "--target", target,
                   "--inputs", inputs, "--output", out + "/", "--iterations", "1"] + shapes
        result = subprocess.run(command, capture_output=True, text=True)
        if result.returncode != 0:
            return None, f"kiln run failed ({result.returncode}):\n{result.stderr}{result.stdout}"
        errors = []
        for output in entry["outputs"]:
            expected = np.load(os.path.join(fixtures, f"{prefix}.out.{output}.npy"))
            actual = np.load(os.path.join(out, f"{output}.npy"))
            if actual.shape != expected.shape:
                return None, f"output {output}: shape {actual.shape}, torch {expected.shape}"
            scale = float(np.abs(expected).max())
            error = float(np.abs(actual.astype(np.float64) - expected).max())
            errors.append((output, error, scale))
        return errors, ""


def main():
    args = sys.argv[1:]
    if len(args) < 2:
        print(__doc__)
        return 2
    kiln, fixtures = args[0], args[1]
    sim = []
    names = []
    rest = args[2:]
    while rest:
        word = rest.pop(0)
        if word == "--sim":
            sim = rest.pop(0).split(",")
        else:
            names.append(word)
    status = export_fixtures(fixtures, names)
    if status != 0:
        return status
    with open(os.path.join(fixtures, "manifest.json")) as f:
        manifest = json.load(f)
    failed = 0
    # The fixtures of a partial export may lack some of the names asked for.
    missing = [name for name in names if name not in manifest]
    if missing:
        print(f"no fixtures for {missing}; the models are {sorted(manifest)}")
        return 1
    print(f"{'model':28} {'target':7} {'output':8} {'max |kiln-torch|':>17} {'max |torch|':>12}"
          f"  result")
    for name in names or sorted(manifest):
        entry = manifest[name]
        targets = (["cpu"] + (["cpu-sym"] if symbolic_batch(entry) else [])
                   + (["sim"] if name in sim else []))
        for target in targets:
            errors, message = run_model(kiln, fixtures, name, entry, target)
            refusal = SYMBOLIC_REFUSED.get(name) if target == "cpu-sym" else None
            if refusal:
                expected = errors is None and refusal in message
                failed += not expected
                print(f"{name:28} {target:7} " + (
                    f"refused, as expected: {refusal}" if expected else
                    f"NOT refused as SYMBOLIC_REFUSED expects: {message or 'it ran'}"))
                continue
            if errors is None:
                print(f"{name:28} {target:7} FAILED: {message}")
                failed += 1
                continue
            for output, error, scale in errors:
                ok = error <= RELATIVE_TOLERANCE * scale
                failed += not ok
                print(f"{name:28} {target:7} {output:8} {error:17.3g} {scale:12.3g}  "
                      f"{'ok' if ok else 'MISMATCH'}")
    print(f"{failed} failures")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
