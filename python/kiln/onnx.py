"""ONNX models as kiln graphs: `kiln.onnx.load("model.onnx", shapes={"input": [1, 3, 224, 224]})`
imports through kiln's C++ importer (frontend/onnx, docs/onnx.md) into the same Graph the DSL
builds, ready for kiln.compile."""

from ._kiln.onnx import load  # noqa: F401
