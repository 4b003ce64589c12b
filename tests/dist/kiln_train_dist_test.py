#!/usr/bin/env python3
"""`kiln train` as several ranks under mpirun (docs/distributed.md, "Training across processes:
the command"); tests/dist/CMakeLists.txt registers one ctest entry per scenario:

    kiln_train_dist_test.py KILN WORKDIR SCENARIO

Each scenario trains a recipe for a few steps on a few hundred Fashion-MNIST images and compares
the trained weights (--save-weights) of N ranks with one process's: the same global batches
summed in another order, so they agree to f32 rounding, not bit for bit (TOLERANCE). The global
batch is 49, which neither 2 nor 3 divides, so the shards are uneven. Exits 77 (ctest: skipped),
saying why, where mpirun or the data set is missing.
"""
import json
import os
import pathlib
import shutil
import struct
import subprocess
import sys
import time

import numpy as np

# |N ranks - one process| <= TOLERANCE * (1 + |one process|), per element, after a few dozen
# steps: each step's gradients are summed in another order (f32, about 1e-7 relative), and the
# optimizers carry that difference on without amplifying it much at these learning rates.
TOLERANCE = 1e-4
DATA = pathlib.Path("/usr/share/datasets/fashion-mnist")
MPIRUN_FLAGS = ["--allow-run-as-root", "--oversubscribe",
                # No single-copy (CMA) transfers: containers without ptrace rights refuse them.
                "--mca", "btl_vader_single_copy_mechanism", "none"]
# The fault scenarios keep the survivors alive to report the missing rank themselves (Open MPI
# would otherwise end the job as soon as one rank dies).
FAULT_FLAGS = ["--mca", "orte_abort_on_non_zero_status", "0",
               "--mca", "orte_allowed_exit_without_sync", "1"]
# Small runs: 392 training images are 8 steps of 49 per epoch.
MLP = ["mlp", "--batch", "49", "--limit", "392", "--test-limit", "64", "--target", "cpu",
       "--seed", "3", "--quiet"]
CNN = ["cnn", "--batch", "49", "--limit", "196", "--test-limit", "64", "--target", "cpu",
       "--seed", "5", "--quiet"]
VGG = ["vgg-transfer", "--width-divisor", "16", "--batch", "49", "--limit", "98",
       "--test-limit", "49", "--target", "cpu", "--seed", "7", "--quiet"]


class Failure(Exception):
    pass


def skip(why):
    print(f"SKIPPED: {why}")
    sys.exit(77)


def read_safetensors(path):
    """{name: numpy array} of a safetensors file (f32, f16, i64 only: what kiln train writes)."""
    blob = pathlib.Path(path).read_bytes()
    (size,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + size])
    types = {"F32": np.float32, "F16": np.float16, "I64": np.int64, "F64": np.float64}
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        data = blob[8 + size + begin:8 + size + end]
        tensors[name] = np.frombuffer(data, dtype=types[entry["dtype"]]).reshape(entry["shape"])
    return tensors


class Runner:
    def __init__(self, kiln, workdir, scenario):
        self.kiln = kiln
        self.dir = pathlib.Path(workdir) / scenario
        shutil.rmtree(self.dir, ignore_errors=True)
        self.dir.mkdir(parents=True)
        self.env = dict(os.environ)
        # Compiled CPU code is cached and shared by the scenarios: each shard size compiles once.
        self.env.setdefault("KILN_CACHE_DIR", str(pathlib.Path(workdir) / "kernel-cache"))
        self.env["OMPI_MCA_btl_vader_single_copy_mechanism"] = "none"
        # One thread per rank: the ranks share the machine's cores.
        self.env.setdefault("KILN_THREADS", "1")
        self.runs = 0

    def run(self, command, expect_status=0, env=None, timeout=90):
        self.runs += 1
        started = time.monotonic()
        result = subprocess.run(command, env={**self.env, **(env or {})}, capture_output=True,
                                text=True, timeout=timeout)
        elapsed = time.monotonic() - started
        shown = " ".join(str(word) for word in command)
        print(f"$ {shown}  # {elapsed:.1f} s, exit {result.returncode}")
        if expect_status is not None and result.returncode != expect_status:
            print(result.stdout + result.stderr)
            raise Failure(f"expected exit status {expect_status}, got {result.returncode}")
        return result, elapsed

    def train(self, ranks, args, name, env=None, expect_status=0, mpirun_flags=()):
        """kiln train with `ranks` processes (0: no launcher); returns (result, weights file)."""
        weights = self.dir / f"{name}.safetensors"
        command = [self.kiln, "train", *args, "--save-weights", str(weights)]
        if ranks:
            command = ["mpirun", *MPIRUN_FLAGS, *mpirun_flags, "-np", str(ranks), *command]
        result, _ = self.run(command, expect_status=expect_status, env=env)
        return result, weights


def compare(reference_path, candidate_path, what, tolerance=TOLERANCE):
    reference = read_safetensors(reference_path)
    candidate = read_safetensors(candidate_path)
    if reference.keys() != candidate.keys():
        raise Failure(f"{what}: the weights hold other tensors: {sorted(reference)} vs "
                      f"{sorted(candidate)}")
    worst, worst_name = 0.0, None
    for name, expected in reference.items():
        expected = expected.astype(np.float64)
        got = candidate[name].astype(np.float64)
        if not np.all(np.isfinite(got)):
            raise Failure(f"{what}: {name} is not finite")
        error = float(np.max(np.abs(got - expected) / (1 + np.abs(expected))))
        if error > worst:
            worst, worst_name = error, name
    print(f"{what}: largest difference {worst:.2e} ({worst_name}), tolerance {tolerance:.0e}")
    if worst > tolerance:
        raise Failure(f"{what}: {worst_name} differs by {worst:.2e} > {tolerance:.0e}")


def must_differ(first_path, second_path, what):
    """A comparison that could fail: training must have changed the weights at all."""
    first, second = read_safetensors(first_path), read_safetensors(second_path)
    if all(np.array_equal(first[name], second[name]) for name in first):
        raise Failure(f"{what}: the weights are identical, so the comparison proves nothing")


def expect_in(text, needle, what):
    if needle not in text:
        raise Failure(f"{what}: expected {needle!r} in the output")


# --- scenarios ---------------------------------------------------------------------------------

def equivalence(runner, args, epochs):
    args = [*args, "--epochs", str(epochs)]
    _, one = runner.train(0, args, "one-process")
    for ranks in (1, 2, 3):
        result, weights = runner.train(ranks, args, f"np{ranks}")
        # Rank 0 alone reports: one summary line, not one per rank.
        if result.stdout.count("test accuracy:") != 1:
            raise Failure(f"np{ranks}: expected one 'test accuracy:' line (rank 0's), got "
                          f"{result.stdout.count('test accuracy:')}:\n{result.stdout}")
        compare(one, weights, f"mpirun -np {ranks} against one process")
    _, shorter = runner.train(0, [*args[:-1], str(epochs + 1)], "one-process-longer")
    must_differ(one, shorter, "one more epoch")


def scenario_mlp(runner):
    equivalence(runner, MLP, epochs=2)


def scenario_cnn(runner):
    equivalence(runner, CNN, epochs=2)


def scenario_accumulate(runner):
    args = [*MLP, "--accumulate", "2", "--epochs", "2"]
    _, one = runner.train(0, args, "one-process")
    _, three = runner.train(3, args, "np3")
    compare(one, three, "--accumulate 2 on 3 ranks against one process")
    _, plain = runner.train(3, [*MLP, "--epochs", "2"], "np3-no-accumulation")
    must_differ(three, plain, "accumulation against none")


def scenario_frozen(runner):
    # vgg-transfer's base (26 tensors) is frozen: never reduced, never changed.
    _, one = runner.train(0, [*VGG, "--epochs", "2"], "one-process")
    _, two = runner.train(2, [*VGG, "--epochs", "2"], "np2")
    compare(one, two, "vgg-transfer on 2 ranks against one process")
    _, early = runner.train(2, [*VGG, "--epochs", "1"], "np2-one-epoch")
    trained, untrained = read_safetensors(two), read_safetensors(early)
    frozen = [name for name in trained if name.startswith("base")] or \
        [name for name in trained if np.array_equal(trained[name], untrained[name])]
    changed = [name for name in trained if not np.array_equal(trained[name], untrained[name])]
    if len(frozen) < 26 or not changed:
        raise Failure(f"expected the 26 frozen base tensors unchanged by an epoch and the head "
                      f"trained: {len(frozen)} frozen, {len(changed)} changed")
    for name in frozen:
        if not np.array_equal(trained[name], untrained[name]):
            raise Failure(f"frozen {name} changed between epochs on 2 ranks")
    print(f"{len(frozen)} frozen tensors unchanged, {len(changed)} trained")


def scenario_overflow(runner):
    # fp16-mixed turns on dynamic loss scaling. Step 3's inputs get an inf: on the one process's
    # batch, and on the ranks' on rank 1 only. Every rank must skip that step (a rank that
    # applied it would diverge and fail), and end where the one process ends.
    args = [*MLP, "--precision", "fp16-mixed", "--epochs", "1"]
    args.remove("--quiet")
    result, one = runner.train(0, args, "one-process", env={"KILN_TRAIN_FAULT": "overflow:0:3"})
    expect_in(result.stderr, "(1 steps skipped", "one process")
    result, two = runner.train(2, args, "np2", env={"KILN_TRAIN_FAULT": "overflow:1:3"})
    expect_in(result.stderr, "(1 steps skipped", "2 ranks, rank 1 overflowing")
    compare(one, two, "an overflow on rank 1 of 2 against one on the one process")
    _, clean = runner.train(2, args, "np2-no-overflow")
    must_differ(two, clean, "with and without the skipped step")


def scenario_resume(runner):
    # Written by 2 ranks after epoch 1, resumed on 3 for epoch 2.
    checkpoint = runner.dir / "two-ranks.ckpt.safetensors"
    runner.train(2, [*MLP, "--epochs", "1", "--checkpoint", str(checkpoint)], "np2-epoch1")
    files = sorted(path.name for path in runner.dir.iterdir())
    if files != ["np2-epoch1.safetensors", "two-ranks.ckpt.safetensors"]:
        raise Failure(f"rank 0 alone writes the checkpoint and the weights; the directory holds "
                      f"{files}")
    result, resumed = runner.train(3, [*MLP, "--epochs", "2", "--resume", str(checkpoint)],
                                   "np3-resumed")
    expect_in(result.stdout, "resumed:   1 epochs", "3 ranks resuming")
    _, one = runner.train(0, [*MLP, "--epochs", "2"], "one-process")
    compare(one, resumed, "2 ranks then 3 against one process")


def scenario_rank_exit(runner):
    # Rank 2 of 3 vanishes before step 2, as a killed process does (KILN_TRAIN_FAULT=exit: no
    # cleanup, no MPI_Finalize); the others wait in that step's all-reduce and must fail within
    # the timeout (2 s), naming it.
    env = {"KILN_TRAIN_FAULT": "exit:2:2", "KILN_DIST_TIMEOUT": "2"}
    started = time.monotonic()
    result, _ = runner.train(3, [*MLP, "--epochs", "1"], "lost", env=env, expect_status=None,
                             mpirun_flags=FAULT_FLAGS)
    elapsed = time.monotonic() - started
    print(result.stdout + result.stderr)
    # mpirun's status says nothing here (it exits 0 when told to keep the survivors alive):
    # each survivor's own error must name the rank.
    for survivor in (0, 1):
        prefix = f"kiln train [rank {survivor} of 3 (MPI)]: error:"
        lines = [line for line in result.stderr.splitlines() if line.startswith(prefix)]
        if not lines or "rank 2 did not arrive" not in lines[0]:
            raise Failure(f"rank {survivor} did not report rank 2 missing: {lines}")
    # Loading the data and compiling take a few seconds; a hang would take the 90 s timeout.
    if elapsed > 30:
        raise Failure(f"the survivors took {elapsed:.1f} s to give up on rank 2")
    print(f"the survivors named rank 2; the job ended in {elapsed:.1f} s")


def scenario_mismatch(runner):
    # Two ranks started with different models (mpirun's MPMD form): --label-smoothing changes the
    # loss, so the programs differ and both ranks refuse to train.
    command = [runner.kiln, "train", *MLP, "--epochs", "1"]
    result, _ = runner.run(["mpirun", *MPIRUN_FLAGS, *FAULT_FLAGS, "-np", "1", *command, ":",
                            "-np", "1", *command, "--label-smoothing", "0.1"],
                           expect_status=None, env={"KILN_DIST_TIMEOUT": "10"})
    print(result.stdout + result.stderr)
    for rank in (0, 1):
        prefix = f"kiln train [rank {rank} of 2 (MPI)]: error:"
        lines = [line for line in result.stderr.splitlines() if line.startswith(prefix)]
        if not lines or "compiled different programs" not in lines[0]:
            raise Failure(f"rank {rank} did not refuse the mismatch: {lines}")


def scenario_nproc(runner):
    args = [*MLP, "--epochs", "1"]
    _, launched = runner.train(2, args, "mpirun-np2")
    nproc_weights = runner.dir / "nproc2.safetensors"
    result, _ = runner.run([runner.kiln, "train", "--nproc", "2", *args, "--save-weights",
                            str(nproc_weights)])
    if result.stdout.count("test accuracy:") != 1:
        raise Failure(f"--nproc 2: expected rank 0's summary alone:\n{result.stdout}")
    compare(launched, nproc_weights, "--nproc 2 against mpirun -np 2", tolerance=0)
    # The launcher's status is the command's: a bad recipe option fails the same way, once.
    result, _ = runner.run([runner.kiln, "train", "--nproc", "2", *args, "--clip-norm", "0"],
                           expect_status=2)
    # mpirun missing from PATH: a clear error, exit 1.
    result, _ = runner.run([runner.kiln, "train", "--nproc", "2", *args], expect_status=1,
                           env={"PATH": str(runner.dir)})
    expect_in(result.stderr, "mpirun, which is not on PATH", "--nproc without mpirun")


SCENARIOS = {
    "mlp": scenario_mlp, "cnn": scenario_cnn, "accumulate": scenario_accumulate,
    "frozen": scenario_frozen, "overflow": scenario_overflow, "resume": scenario_resume,
    "rank-exit": scenario_rank_exit, "mismatch": scenario_mismatch, "nproc": scenario_nproc,
}


def main():
    if len(sys.argv) != 4 or sys.argv[3] not in SCENARIOS:
        sys.exit(f"usage: kiln_train_dist_test.py KILN WORKDIR {'|'.join(SCENARIOS)}")
    kiln, workdir, scenario = sys.argv[1:]
    if not shutil.which("mpirun"):
        skip("mpirun is not installed (Debian: openmpi-bin, which scripts/setup.sh installs)")
    if not (DATA / "train-images-idx3-ubyte.gz").exists():
        skip(f"Fashion-MNIST is not in {DATA} (Debian: dataset-fashion-mnist)")
    runner = Runner(kiln, workdir, scenario)
    started = time.monotonic()
    try:
        SCENARIOS[scenario](runner)
    except (Failure, subprocess.TimeoutExpired) as failure:
        print(f"kiln-train-dist: {scenario}: FAIL: {failure}")
        sys.exit(1)
    print(f"kiln-train-dist: {scenario}: PASS ({runner.runs} runs, "
          f"{time.monotonic() - started:.1f} s)")


if __name__ == "__main__":
    main()
