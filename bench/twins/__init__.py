"""PyTorch twins of kiln's example models (examples/models), one module per
model: the same computation, and parameters loaded from kiln's names and
layouts. Each module has NAME (kiln's example name), OUTPUT (the output's
name), param_shapes() (kiln name -> shape, in kiln's layout),
DEFAULT_BATCH (kiln's), input_specs(batch) and Twin (an nn.Module with load_kiln(params))."""
from . import cnn, lstm, mlp, resnet, transformer, vgg

# kiln's registry order (examples/models/ExampleRegistry.cpp).
TWINS = {twin.NAME: twin for twin in (cnn, mlp, lstm, resnet, transformer, vgg)}
