"""examples/python/notebook.py runs and shows what it promises: PTX, the GEMM's group, the
forced winner, and the sweep (plotted, or as a table without matplotlib)."""

import os
import pathlib
import subprocess
import sys

import kiln

EXAMPLE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "python" / "notebook.py"


def test_notebook_example_runs(tmp_path):
    plot = tmp_path / "sweep.svg"
    # The package this suite imports, wherever PYTHONPATH pointed (it may be relative).
    env = dict(os.environ, PYTHONPATH=str(pathlib.Path(kiln.__file__).resolve().parents[1]))
    done = subprocess.run([sys.executable, str(EXAMPLE), str(plot)], capture_output=True,
                          text=True, timeout=120, env=env, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert ".target sm_90a" in out
    assert "<kiln.Group 0: contraction matmul+add+relu" in out
    assert "(forced)" in out
    assert plot.stat().st_size > 0
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert "winner" in out and "default" in out
