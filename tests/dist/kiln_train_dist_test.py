#!/usr/bin/env python3
"""`kiln train` as several ranks under mpirun (docs/distributed.md, "Training across processes:
the command"); tests/dist/CMakeLists.txt registers one ctest entry per scenario:

    kiln_train_dist_test.py KILN WORKDIR SCENARIO

Each scenario trains a recipe for a few steps on a few hundred Fashion-MNIST images (a copy of the
first ones, so that no rank spends a second reading all 70,000) and compares
the trained weights (--save-weights) of N ranks with one process's: the same global batches
summed in another order, so they agree to f32 rounding, not bit for bit (TOLERANCE). The global
batch is 49, which neither 2 nor 3 divides, so the shards are uneven. Exits 77 (ctest: skipped),
saying why, where mpirun or the data set is missing.
"""
import gzip
import json
import os
import pathlib
import shutil
import struct
import subprocess
import sys
import time

try:
    import numpy as np
except ImportError:  # the weights are compared with numpy
    print("SKIPPED: numpy is not installed (Debian: python3-numpy, which scripts/setup.sh "
          "installs)")
    sys.exit(77)

# |N ranks - one process| <= TOLERANCE * (1 + |one process|), per element, after a few dozen
# steps: each step's gradients are summed in another order (f32, about 1e-7 relative), and the
# optimizers carry that difference on without amplifying it much at these learning rates (the
# MLP's 16 steps differ by under 1e-7). A rank that trained on the wrong rows, or a gradient
# weighted wrongly, is off by 1e-3 or more.
TOLERANCE = 1e-5
# The long run: 200 steps of the MLP on 3 ranks. Their difference from one process grows with the
# steps, not smoothly (docs/distributed.md, "Training across processes: the command"): 8e-8 after
# 16 steps, 2e-7 after 80, 3e-6 after 120, 9e-5 after 200 (2 ranks: 9.6e-4 after 200). The
# tolerance sits above that curve; every rank weighted 1/3 instead of its rows/49 ends 2.8e-1 away.
LONG_STEPS = 200
LONG_TOLERANCE = 2e-3
DATA = pathlib.Path("/usr/share/datasets/fashion-mnist")
MPIRUN_FLAGS = ["--allow-run-as-root", "--oversubscribe",
                # No single-copy (CMA) transfers: containers without ptrace rights refuse them.
                "--mca", "btl_vader_single_copy_mechanism", "none"]
# The fault scenarios keep the survivors alive to report the missing rank themselves (Open MPI
# would otherwise end the job as soon as one rank dies).
FAULT_FLAGS = ["--mca", "orte_abort_on_non_zero_status", "0",
               "--mca", "orte_allowed_exit_without_sync", "1"]
# The Fashion-MNIST subset: 392 training images are 8 steps of 49 per epoch.
TRAIN_IMAGES, TEST_IMAGES = 392, 64
MLP = ["mlp", "--batch", "49", "--target", "cpu", "--seed", "3", "--quiet"]
CNN = ["cnn", "--batch", "49", "--limit", "196", "--target", "cpu", "--seed", "5", "--quiet"]
VGG = ["vgg-transfer", "--width-divisor", "16", "--optimizer", "sgd", "--batch", "49",
       "--limit", "98", "--test-limit", "49", "--target", "cpu", "--seed", "7", "--quiet"]


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


def small_fashion_mnist(workdir):
    """The first TRAIN_IMAGES and TEST_IMAGES of Fashion-MNIST as IDX files in workdir (made
    once, atomically, for every scenario)."""
    target = pathlib.Path(workdir) / "fashion-mnist-small"
    if target.exists():
        return target
    staging = pathlib.Path(workdir) / f"fashion-mnist-small.{os.getpid()}"
    staging.mkdir(parents=True, exist_ok=True)
    for split, count in (("train", TRAIN_IMAGES), ("t10k", TEST_IMAGES)):
        for kind in ("images-idx3", "labels-idx1"):
            name = f"{split}-{kind}-ubyte.gz"
            with gzip.open(DATA / name) as source:
                magic = source.read(4)
                dims = magic[3]
                shape = list(struct.unpack(f">{dims}I", source.read(4 * dims)))
                row = int(np.prod(shape[1:], dtype=np.int64)) if dims > 1 else 1
                body = source.read(count * row)
            shape[0] = count
            with gzip.open(staging / name, "wb") as out:
                out.write(magic + struct.pack(f">{dims}I", *shape) + body)
    try:
        staging.rename(target)
    except OSError:  # another scenario made it first
        shutil.rmtree(staging, ignore_errors=True)
    return target


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
        self.env.setdefault("KILN_NUM_THREADS", "1")
        self.runs = 0
        self.data = small_fashion_mnist(workdir)

    def kiln_train(self, args):
        return [self.kiln, "train", *args, "--data", str(self.data)]

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
        command = [*self.kiln_train(args), "--save-weights", str(weights)]
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

def equivalence(runner, args, ranks=(1, 2, 3)):
    _, one = runner.train(0, args, "one-process")
    for ranks in ranks:
        result, weights = runner.train(ranks, args, f"np{ranks}")
        # Rank 0 alone reports: one summary line, not one per rank.
        if result.stdout.count("test accuracy:") != 1:
            raise Failure(f"np{ranks}: expected one 'test accuracy:' line (rank 0's), got "
                          f"{result.stdout.count('test accuracy:')}:\n{result.stdout}")
        compare(one, weights, f"mpirun -np {ranks} against one process")


def scenario_mlp(runner):
    # 16 steps on 1 and 2 ranks, then the long run: 200 steps on 3 ranks (16, 16 and 17 rows).
    equivalence(runner, [*MLP, "--epochs", "2"], ranks=(1, 2))
    long = [*MLP, "--epochs", str(LONG_STEPS // 8)]
    _, one = runner.train(0, long, "one-process-long")
    _, three = runner.train(3, long, "np3-long")
    compare(one, three, f"{LONG_STEPS} steps on 3 ranks against one process",
            tolerance=LONG_TOLERANCE)


def scenario_cnn(runner):
    # SGD, not the recipe's Adam: Adam divides each gradient by its own running magnitude, so
    # where a gradient is rounding noise (a filter tap that sees only padding, a unit that never
    # fires) its step is still about +-lr, and the reduction order's rounding flips its sign:
    # 2 ranks or 3 then differ from one process by up to 2 lr per step (1.8e-3 here), which says
    # nothing about the reduction. SGD carries the rounding itself (1.4e-8 here).
    equivalence(runner, [*CNN, "--optimizer", "sgd", "--epochs", "2"])


def scenario_accumulate(runner):
    args = [*MLP, "--accumulate", "2", "--epochs", "2"]
    _, one = runner.train(0, args, "one-process")
    _, three = runner.train(3, args, "np3")
    compare(one, three, "--accumulate 2 on 3 ranks against one process")
    _, plain = runner.train(0, [*MLP, "--epochs", "2"], "one-process-no-accumulation")
    must_differ(one, plain, "accumulation against none")


def scenario_frozen(runner):
    # vgg-transfer's base (13 convolutions: 26 tensors) is frozen: never reduced, never changed,
    # while the head trains. A batch of 48 makes equal shards, one compile size for the 2 ranks.
    args = [*VGG, "--batch", "48"]
    _, one = runner.train(0, [*args, "--epochs", "2"], "one-process")
    _, two = runner.train(2, [*args, "--epochs", "2"], "np2")
    compare(one, two, "vgg-transfer on 2 ranks against one process")
    _, early = runner.train(0, [*args, "--epochs", "1"], "one-process-one-epoch")
    trained, ranks, untrained = (read_safetensors(path) for path in (one, two, early))
    frozen = [name for name in trained if np.array_equal(trained[name], untrained[name])]
    if len(frozen) != 26 or len(frozen) == len(trained):
        raise Failure(f"expected the 26 base tensors alone unchanged by an epoch: {frozen}")
    for name in frozen:
        if not np.array_equal(ranks[name], trained[name]):
            raise Failure(f"frozen {name} differs between 2 ranks and one process")
    print(f"{len(frozen)} frozen tensors bitwise the same on 2 ranks, "
          f"{len(trained) - len(frozen)} trained")


def scenario_overflow(runner):
    # fp16-mixed turns on dynamic loss scaling. Step 3's inputs get an inf on one rank only
    # (KILN_TRAIN_FAULT), so that rank's gradients are not finite; the reduced gradients are
    # then not finite on every rank, and every rank must skip the step (a rank that applied it
    # would diverge and fail). Which rank overflowed cannot matter: bitwise the same weights.
    args = [*MLP, "--precision", "fp16-mixed", "--epochs", "1"]
    args.remove("--quiet")  # the epoch line counts the skipped steps
    results = {}
    for rank in (1, 0):
        result, results[rank] = runner.train(2, args, f"np2-overflow-rank{rank}",
                                             env={"KILN_TRAIN_FAULT": f"overflow:{rank}:3"})
        expect_in(result.stderr, "(1 steps skipped", f"2 ranks, rank {rank} overflowing")
    compare(results[1], results[0], "an overflow on rank 1 against one on rank 0", tolerance=0)
    # One process skipping the same step ends close by: f16 operands round each shard's
    # gradients at another scale (a shard's mean, then weighted), about 1e-3 relative per step.
    result, one = runner.train(0, args, "one-process", env={"KILN_TRAIN_FAULT": "overflow:0:3"})
    expect_in(result.stderr, "(1 steps skipped", "one process")
    compare(one, results[1], "2 ranks against one process, fp16-mixed", tolerance=2e-2)
    _, clean = runner.train(2, args, "np2-no-overflow")
    must_differ(results[1], clean, "with and without the skipped step")


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
        if not lines or "timed out after 2 s: rank 2 did not arrive" not in lines[0]:
            raise Failure(f"rank {survivor} did not report rank 2 missing: {lines}")
    # The communicator's own tests time the timeout (test_dist/fault-*); here a survivor that
    # hung instead would run into the 90 s limit, and compiling takes seconds, not a minute.
    if elapsed > 60:
        raise Failure(f"the survivors took {elapsed:.1f} s to give up on rank 2")
    print(f"the survivors named rank 2; the job ended in {elapsed:.1f} s")


def expect_program_mismatch(runner, args, *rank1_args):
    """Two ranks started with `args`, rank 1 adding `rank1_args` (mpirun's MPMD form): both
    must refuse to train, their programs differing."""
    command = runner.kiln_train(args)
    result, _ = runner.run(["mpirun", *MPIRUN_FLAGS, *FAULT_FLAGS, "-np", "1", *command, ":",
                            "-np", "1", *command, *rank1_args],
                           expect_status=None, env={"KILN_DIST_TIMEOUT": "10"})
    print(result.stdout + result.stderr)
    for rank in (0, 1):
        prefix = f"kiln train [rank {rank} of 2 (MPI)]: error:"
        lines = [line for line in result.stderr.splitlines() if line.startswith(prefix)]
        if not lines or "compiled different programs" not in lines[0]:
            raise Failure(f"rank {rank} did not refuse the mismatch: {lines}")


def scenario_mismatch(runner):
    # --label-smoothing changes two constants of the loss and nothing else, so the programs
    # differ. A batch of 48 gives equal shards, whose programs are compared as printed; 49
    # gives 25 and 24 rows, compared by the batch-free signature, which keeps the constants'
    # values except the loss's -1/rows.
    for batch in ("48", "49"):
        expect_program_mismatch(runner, [*MLP, "--batch", batch, "--epochs", "1"],
                                "--label-smoothing", "0.1")
    # The same smoothing on both ranks, with uneven shards: they agree and train.
    smoothed = [*MLP, "--label-smoothing", "0.1", "--epochs", "1"]
    result, _ = runner.train(2, smoothed, "np2-smoothed")
    expect_in(result.stdout, "test accuracy:", "2 ranks, both smoothing their labels")


def scenario_buckets(runner):
    # --first-bucket-mib and --bucket-mib reach the training program: caps of about 1 KiB split
    # the MLP's gradients into a bucket about every layer (the default caps: one of all six),
    # 2 ranks still train what one process trains, and ranks given other caps than each other
    # compiled other programs and refuse.
    tiny = ["--first-bucket-mib", "0.001", "--bucket-mib", "0.001"]
    _, one = runner.train(0, [*MLP, "--epochs", "1"], "one-process")
    _, two = runner.train(2, [*MLP, "--epochs", "1", *tiny], "np2-1kib-buckets")
    compare(one, two, "2 ranks with 1 KiB buckets against one process")
    expect_program_mismatch(runner, [*MLP, "--batch", "48", "--epochs", "1"], *tiny)


def scenario_nproc(runner):
    args = [*MLP, "--epochs", "1"]
    _, launched = runner.train(2, args, "mpirun-np2")
    nproc_weights = runner.dir / "nproc2.safetensors"
    result, _ = runner.run([*runner.kiln_train(["--nproc", "2", *args]), "--save-weights",
                            str(nproc_weights)])
    if result.stdout.count("test accuracy:") != 1:
        raise Failure(f"--nproc 2: expected rank 0's summary alone:\n{result.stdout}")
    compare(launched, nproc_weights, "--nproc 2 against mpirun -np 2", tolerance=0)
    # Bad usage is caught before mpirun starts, once.
    result, _ = runner.run([*runner.kiln_train(["--nproc", "2", *args]), "--clip-norm", "0"],
                           expect_status=2)
    if result.stderr.count("kiln train:") != 1:
        raise Failure(f"--nproc: expected one usage error:\n{result.stderr}")
    # The launcher's status is the command's: a rank's failure (a data directory that does not
    # exist) fails the job.
    runner.run([*runner.kiln_train(["--nproc", "2", *args]), "--data", str(runner.dir / "none")],
               expect_status=1)
    # mpirun missing from PATH: a clear error, exit 1.
    result, _ = runner.run(runner.kiln_train(["--nproc", "2", *args]), expect_status=1,
                           env={"PATH": str(runner.dir)})
    expect_in(result.stderr, "mpirun, which is not on PATH", "--nproc without mpirun")


def scenario_gpu_choice(runner):
    # --target cuda under a launcher: each rank sees only its local rank's entry of the
    # GPUs it was given (7 and 9 here, which no machine's driver offers), as GPU 0. Without
    # a usable GPU every rank fails, and its error says which GPU it was on.
    command = runner.kiln_train([*MLP, "--epochs", "1", "--target", "cuda"])
    result, _ = runner.run(["mpirun", *MPIRUN_FLAGS, *FAULT_FLAGS, "-x", "CUDA_VISIBLE_DEVICES",
                            "-np", "2", *command], expect_status=None,
                           env={"CUDA_VISIBLE_DEVICES": "7,9", "KILN_DIST_TIMEOUT": "10"})
    print(result.stdout + result.stderr)
    for rank, gpu in ((0, 7), (1, 9)):
        note = (f"note: this rank runs on GPU {gpu} (local rank {rank}, as "
                f"CUDA_VISIBLE_DEVICES={gpu})")
        if note not in result.stderr:
            raise Failure(f"rank {rank}: expected {note!r}")


def scenario_cuda_unavailable(runner):
    # --target cuda on 2 ranks opens NCCL over MPI before anything compiles. Without NCCL, or
    # without the CUDA driver NCCL needs (this machine has NCCL but no libcuda), every rank
    # fails at once naming what is missing: the ranks compare what they could open, so none
    # waits for another until the timeout.
    command = runner.kiln_train([*MLP, "--epochs", "1", "--target", "cuda"])
    timeout = 20
    for what, env, needle in (
            ("NCCL missing", {"KILN_LIBNCCL": "/nonexistent/libnccl.so.2"},
             "NCCL is unavailable: KILN_LIBNCCL=/nonexistent/libnccl.so.2"),
            ("this machine's NCCL and driver", {}, None)):
        started = time.monotonic()
        result, _ = runner.run(["mpirun", *MPIRUN_FLAGS, *FAULT_FLAGS, "-np", "2", *command],
                               expect_status=None, env={**env, "KILN_DIST_TIMEOUT": str(timeout)})
        elapsed = time.monotonic() - started
        print(result.stdout + result.stderr)
        if needle is None and "test accuracy:" in result.stdout:
            print(f"{what}: both ranks trained on GPUs with NCCL: nothing is missing here")
            continue
        for rank in (0, 1):
            prefix = (f"kiln train [rank {rank} of 2 (MPI)]: error: opening NCCL on rank {rank} "
                      f"of 2 (MPI): ")
            lines = [line for line in result.stderr.splitlines() if line.startswith(prefix)]
            if not lines:
                raise Failure(f"{what}: rank {rank} did not report why NCCL could not open")
            reason = lines[0][len(prefix):]
            if needle is not None and not reason.startswith(needle):
                raise Failure(f"{what}: rank {rank}: expected {needle!r}, got {reason!r}")
            if needle is None and not (reason.startswith("NCCL is unavailable") or
                                       reason.startswith("NCCL needs GPU 0: ")):
                raise Failure(f"{what}: rank {rank} does not say which library is missing: "
                              f"{reason!r}")
        # No collective timed out: every rank knew at once.
        if elapsed > timeout / 2:
            raise Failure(f"{what}: the ranks took {elapsed:.1f} s to fail")
        print(f"{what}: both ranks failed in {elapsed:.1f} s, saying why")


SCENARIOS = {
    "mlp": scenario_mlp, "cnn": scenario_cnn, "accumulate": scenario_accumulate,
    "frozen": scenario_frozen, "overflow": scenario_overflow, "resume": scenario_resume,
    "rank-exit": scenario_rank_exit, "mismatch": scenario_mismatch, "nproc": scenario_nproc,
    "gpu-choice": scenario_gpu_choice, "cuda-unavailable": scenario_cuda_unavailable,
    "buckets": scenario_buckets,
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
