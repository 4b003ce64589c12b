"""kiln from Python, notebook style: build a model, compile it, read its PTX, sweep the
schedules of its GEMM and plot them (a table when matplotlib is not installed).
Run: PYTHONPATH=build/release/python /usr/bin/python3 examples/python/notebook.py"""
import sys

import numpy as np
import kiln

# A small MLP classifier: two Dense layers and a softmax.
g = kiln.Graph("mlp", seed=0)
x = g.input("x", [32, 64])
h = kiln.nn.Dense(32, activation="relu")(g, x)
g.output("probabilities", kiln.nn.Dense(10, activation="softmax")(g, h))

# Compile for the SIMT simulator: GPU kernels, run on the CPU, so no GPU is needed.
model = kiln.compile(g, target="sim")
out = model(x=np.random.default_rng(0).standard_normal((32, 64)).astype(np.float32))
print("rows sum to", out["probabilities"].sum(axis=1)[:3], "with", model.num_kernels, "kernels")
print("\n".join(model.dump("ptx").splitlines()[:12]), "\n...")

# The fusion groups as the tuner names them; the first GEMM and its schedule space (CPU).
gemm = next(gr for gr in kiln.groups(g, target="cpu") if gr.kind == "contraction")
print(gemm, "default:", gemm.default_schedule)

# Time every schedule of that GEMM, then force the winner on it.
records = kiln.sweep(g, group=gemm, target="cpu", runs=3)
rows = records.to_dict("records") if hasattr(records, "to_dict") else records
winner = next(row for row in rows if row["winner"])
fast = kiln.compile(g, target="cpu", schedules={gemm: winner["schedule"]})
print(fast.dump("kernel").splitlines()[0])
# The plot `kiln tune --sweep` draws: saved where argv[1] says (.png with matplotlib, else
# kiln's own SVG), and the table printed when matplotlib is not installed.
kiln.plot_sweep(records, path=sys.argv[1] if len(sys.argv) > 1 else None)
