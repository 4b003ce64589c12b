"""kiln.train: kiln's trainer (compiler/training, docs/training.md) on a DSL graph whose
outputs include a scalar loss, stepped on numpy arrays or torch tensors."""

from . import _kiln, _tensors


class Trainer:
    """A compiled training program and the parameters and optimizer state it updates.
    `step(**batch)` runs one step on the graph's inputs by name and returns the loss;
    `params()` reads the parameters back as numpy arrays."""

    def __init__(self, trainer):
        self._trainer = trainer
        self.losses = []

    def step(self, **batch):
        """One step on `batch` (every input of the graph by name); returns the loss."""
        buffers = {name: _tensors.to_buffer(value, f"batch input '{name}'")
                   for name, value in batch.items()}
        result = self._trainer.step(buffers)
        self.losses.append(result["loss"])
        return result["loss"]

    def params(self):
        """Every parameter's current value by name, as numpy arrays."""
        return {name: _tensors.to_numpy(buffer) for name, buffer in self._trainer.params().items()}

    @property
    def step_count(self):
        return self._trainer.step_count

    @property
    def learning_rate(self):
        return self._trainer.learning_rate

    @learning_rate.setter
    def learning_rate(self, rate):
        self._trainer.learning_rate = rate


def train(graph, loss="loss", optimizer="sgd", learning_rate=0.01, momentum=0.0, nesterov=False,
          beta1=0.9, beta2=0.999, epsilon=1e-8, weight_decay=None, clip_global_norm=None,
          target="cpu", precision="fp32", batches=None):
    """Compiles the training program of `graph` (a DSL graph; `loss` names its scalar loss
    output) with optimizer "sgd" (momentum, nesterov), "adam" or "adamw" (beta1, beta2,
    epsilon), weight decay and optional global-norm clipping, starting from the graph's
    parameter values. Returns a Trainer; with `batches` (an iterable of dicts of inputs by
    name) runs one step on each first (their losses are in `trainer.losses`)."""
    trainer = Trainer(_kiln._train(graph, loss, optimizer, learning_rate, momentum, nesterov,
                                   beta1, beta2, epsilon, weight_decay, clip_global_norm, target,
                                   precision))
    for batch in batches or ():
        trainer.step(**batch)
    return trainer
