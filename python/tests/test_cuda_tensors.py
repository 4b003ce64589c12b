"""CUDA torch tensors on a real GPU (skipped, with the reason, where torch sees none): a cuda
model's kernels read a CUDA input in place (the address they were given is the tensor's
data_ptr) and write its outputs into CUDA tensors torch allocated; a non-contiguous, a
misaligned or another GPU's tensor is copied on the device once, with the reason; a model on
the simulator copies CUDA inputs to the host and says so. Run on the GPU machine by
scripts/gpu-roundtrip.sh's `python` step."""

import pytest
import torch

import kiln

pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available(), reason="torch sees no CUDA GPU (torch.cuda.is_available())")

ROWS, COLS = 37, 19


def _graph():
    """y = x * 2 + w (a kernel), positive = x > 0 (a bool output) and same = x (an output
    that is the input itself, copied on the device)."""
    graph = kiln.Graph("cuda-tensors", seed=3)
    x = graph.input("x", [ROWS, COLS])
    # torch, not numpy: the GPU machine's numpy may be 2.x, which Debian's pybind11 predates.
    w = graph.param("w", torch.linspace(-1, 1, ROWS * COLS).reshape(ROWS, COLS))
    graph.output("y", x * 2.0 + w)
    graph.output("positive", x > 0.0)
    graph.output("same", x)
    return graph


@pytest.fixture(scope="module")
def cuda_model():
    return kiln.compile(_graph(), target="cuda")


def _expected(x):
    """The CPU model's outputs for x (a CPU tensor)."""
    return kiln.compile(_graph(), target="cpu")(x=x)


def _check_outputs(out, x, device):
    expected = _expected(x.cpu())
    assert sorted(out) == ["positive", "same", "y"]
    for name, tensor in out.items():
        assert tensor.device == device, name
        if tensor.dtype.is_floating_point:  # x * 2 is exact, so one rounding of + w
            torch.testing.assert_close(tensor.cpu(), expected[name], rtol=1e-6, atol=1e-6)
        else:
            assert torch.equal(tensor.cpu(), expected[name]), name
    assert out["same"].data_ptr() != x.data_ptr()  # an output never aliases an input


def test_cuda_input_is_read_in_place_and_outputs_are_cuda_tensors(cuda_model):
    assert cuda_model.device == "cuda:0"
    x = torch.randn(ROWS, COLS, device="cuda:0")
    out = cuda_model(x=x)
    assert cuda_model.last_call_copies == {}
    assert cuda_model._last_device_inputs["x"].address == x.data_ptr()
    _check_outputs(out, x, x.device)
    assert out["positive"].dtype == torch.bool


def test_outputs_are_written_in_torch_memory_the_run_made(cuda_model):
    x = torch.randn(ROWS, COLS, device="cuda:0")
    before = torch.cuda.memory_allocated()
    out = cuda_model(x=x)
    # Three outputs, each allocated once by torch (the allocator rounds to 512 bytes).
    grown = torch.cuda.memory_allocated() - before
    assert grown == sum((t.numel() * t.element_size() + 511) // 512 * 512 for t in out.values())
    assert len({t.data_ptr() for t in out.values()}) == 3


def test_non_contiguous_cuda_input_is_copied_on_the_device(cuda_model):
    x = torch.randn(COLS, ROWS, device="cuda:0").t()
    out = cuda_model(x=x)
    assert cuda_model.last_call_copies["x"].startswith("not C-contiguous")
    assert cuda_model.last_call_copies["x"].endswith("copied on cuda:0")
    assert cuda_model._last_device_inputs["x"].address != x.data_ptr()
    _check_outputs(out, x, x.device)


def test_misaligned_cuda_input_is_copied_on_the_device(cuda_model):
    backing = torch.randn(ROWS * COLS + 1, device="cuda:0")
    x = backing[1:].view(ROWS, COLS)  # contiguous, 4 bytes past torch's 512-byte alignment
    out = cuda_model(x=x)
    assert "not 16-byte aligned" in cuda_model.last_call_copies["x"]
    _check_outputs(out, x, x.device)


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs a second GPU")
def test_another_gpus_tensor_is_copied_to_the_models(cuda_model):
    x = torch.randn(ROWS, COLS, device="cuda:1")
    out = cuda_model(x=x)
    assert cuda_model.last_call_copies["x"] == (
        "on cuda:1, and the model runs on cuda:0: copied there")
    _check_outputs(out, x, torch.device("cuda:0"))


def test_profile_reruns_on_the_cuda_input(cuda_model):
    x = torch.randn(ROWS, COLS, device="cuda:0")
    cuda_model(x=x)
    rows = cuda_model.profile(runs=2)
    assert rows and all(row["calls"] == 2 for row in rows)


def test_sim_model_copies_cuda_inputs_to_the_host():
    model = kiln.compile(_graph(), target="sim")
    x = torch.randn(ROWS, COLS, device="cuda:0")
    out = model(x=x)
    assert model.last_call_copies == {"x": "on cuda:0, and the model runs on sim: copied to the host"}
    _check_outputs(out, x, torch.device("cpu"))
