"""CUDA tensors without a GPU: the DLPack capsules a CUDA torch tensor makes, built by hand
with ctypes (numpy cannot make one), parsed into the DeviceTensor a cuda model's kernels use
in place, or refused with the reason kiln copies them; where a CUDA tensor goes for a model
on each device (placement); and models that run elsewhere refusing device tensors. The same
path on a real GPU, checked by data_ptr, is test_cuda_tensors.py."""

import ctypes
import gc

import numpy as np
import pytest

import kiln
from kiln import _kiln, _tensors

KDL_CPU, KDL_CUDA = 1, 2
KDL_INT, KDL_UINT, KDL_FLOAT = 0, 1, 2
# An address nothing reads: the parser only looks at it (aligned to 512, as torch's are).
FAKE_DEVICE_ADDRESS = 0x7F12_3456_0000


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensor(ctypes.Structure):
    pass


DELETER = ctypes.CFUNCTYPE(None, ctypes.POINTER(DLManagedTensor))
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                            ("deleter", DELETER)]

_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class HandMadeCapsule:
    """A legacy "dltensor" capsule as torch.utils.dlpack.to_dlpack makes for a CUDA tensor,
    whose deleter counts its calls (the consumer must call it exactly once)."""

    def __init__(self, shape, strides=None, address=FAKE_DEVICE_ADDRESS, device=KDL_CUDA,
                 ordinal=0, dtype=(KDL_FLOAT, 32), byte_offset=0):
        self.deleted = 0
        self._shape = (ctypes.c_int64 * len(shape))(*shape)
        self._strides = (ctypes.c_int64 * len(shape))(*strides) if strides else None
        self._deleter = DELETER(self._delete)  # kept: the C side holds a raw pointer to it
        self.managed = DLManagedTensor()
        tensor = self.managed.dl_tensor
        tensor.data = address
        tensor.device = DLDevice(device, ordinal)
        tensor.ndim = len(shape)
        tensor.dtype = DLDataType(dtype[0], dtype[1], 1)
        tensor.shape = self._shape
        tensor.strides = self._strides
        tensor.byte_offset = byte_offset
        self.managed.deleter = self._deleter
        self.capsule = _capsule_new(ctypes.addressof(self.managed), b"dltensor", None)

    def _delete(self, managed):
        self.deleted += 1


def _device_tensor(made, dtype=None, what="input 'x'"):
    return _kiln._device_tensor_of_dlpack(made.capsule, dtype, what)


def test_cuda_capsule_becomes_a_device_tensor_read_in_place():
    made = HandMadeCapsule([3, 5], ordinal=1)
    view, reason = _device_tensor(made)
    assert reason is None
    assert view.address == FAKE_DEVICE_ADDRESS
    assert (view.dtype, view.shape, view.ordinal) == ("f32", [3, 5], 1)
    assert made.deleted == 0  # kiln holds the DLPack tensor while the view lives
    del view
    gc.collect()
    assert made.deleted == 1


def test_explicit_compact_strides_and_byte_offset_are_read_in_place():
    made = HandMadeCapsule([2, 3, 4], strides=[12, 4, 1], byte_offset=64, dtype=(KDL_INT, 64))
    view, reason = _device_tensor(made)
    assert reason is None
    assert view.address == FAKE_DEVICE_ADDRESS + 64 and view.dtype == "i64"


def test_non_contiguous_cuda_capsule_gives_the_reason_to_copy():
    made = HandMadeCapsule([3, 5], strides=[1, 3])  # a transposed view
    view, reason = _device_tensor(made)
    assert view is None
    assert reason == "not C-contiguous (byte strides [4, 12])"
    gc.collect()
    assert made.deleted == 1  # consumed, and released as kiln keeps nothing


def test_misaligned_cuda_capsule_gives_the_reason_to_copy():
    made = HandMadeCapsule([4], byte_offset=4)  # a slice one element in
    view, reason = _device_tensor(made)
    assert view is None
    assert reason == "its address is not 16-byte aligned, as kiln's kernels assume"


def test_bool_travels_as_u8_with_an_override():
    made = HandMadeCapsule([7], dtype=(KDL_UINT, 8))
    view, reason = _device_tensor(made, "bool")
    assert reason is None and view.dtype == "bool"


@pytest.mark.parametrize(
    "made, message",
    [
        (lambda: HandMadeCapsule([3], device=KDL_CPU), "device type 1, not a CUDA device"),
        (lambda: HandMadeCapsule([3, 0]), "of shape [3, 0] has no elements"),
        (lambda: HandMadeCapsule([3], dtype=(KDL_UINT, 16)), "DLPack type (code 1, 16 bits"),
    ],
    ids=["host", "empty", "u16"],
)
def test_unusable_cuda_capsules_are_errors_naming_the_input(made, message):
    made = made()
    with pytest.raises(kiln.Error) as error:
        _device_tensor(made)
    assert error.value.message.startswith("input 'x': ") and message in error.value.message
    gc.collect()
    assert made.deleted == 1  # consumed even when refused


def test_a_consumed_capsule_is_refused():
    made = HandMadeCapsule([3])
    view, _ = _device_tensor(made)
    with pytest.raises(kiln.Error, match="not an unconsumed DLPack capsule"):
        _device_tensor(made)
    assert view.address == FAKE_DEVICE_ADDRESS


def test_host_reader_refuses_a_cuda_capsule():
    made = HandMadeCapsule([3])
    with pytest.raises(kiln.Error, match="input 'x': a DLPack tensor on device type 2"):
        _kiln._buffer_of_dlpack(made.capsule, None, "input 'x'")
    gc.collect()
    assert made.deleted == 1


def test_placement_of_a_cuda_tensor_by_where_the_model_runs():
    assert _tensors.placement("cuda:0", "cuda:0") == ("device", None)
    assert _tensors.placement("cuda:1", "cuda:0") == (
        "device", "on cuda:1, and the model runs on cuda:0: copied there")
    assert _tensors.placement("cuda:0", "sim") == (
        "host", "on cuda:0, and the model runs on sim: copied to the host")
    assert _tensors.placement("cuda:0", "cpu") == (
        "host", "on cuda:0, and the model runs on cpu: copied to the host")


@pytest.mark.parametrize("target", ["cpu", "sim"])
def test_models_off_the_gpu_refuse_device_tensors(target):
    graph = kiln.Graph("device-refused")
    graph.output("y", graph.input("x", [3]) * 2.0)
    model = kiln.compile(graph, target=target)
    assert model.device == target
    assert model._compiled.output_types == {"y": ("f32", [3])}
    made = HandMadeCapsule([3])  # outlives the view, whose release calls its deleter
    view, _ = _device_tensor(made)
    with pytest.raises(kiln.Error, match=f"input 'x' is on cuda:0, and the model runs on "
                                         f"{target}: its kernels cannot use it in place"):
        model._compiled._run_on_device({}, {"x": view}, {})
    # The ordinary path still runs: a numpy array is read on the host.
    np.testing.assert_array_equal(model(x=np.ones(3, np.float32))["y"], np.full(3, 2.0))
