"""kiln.train: the C++ trainer stepped from Python on numpy batches."""

import numpy as np
import pytest

import kiln


def linear_regression(w0, b0, batch=8):
    """loss = mean((x @ w + b - t)^2), whose SGD step numpy computes exactly."""
    g = kiln.Graph("linear", seed=0)
    x = g.input("x", [batch, w0.shape[0]])
    t = g.input("t", [batch, 1])
    diff = x @ g.param("w", w0) + g.param("b", b0) - t
    g.output("loss", kiln.reduce_mean(diff * diff, [0, 1]))
    return g


def batches(rng, count, batch=8, features=4):
    true_w = np.array([[1.0], [2.0], [-1.0], [0.5]])
    for _ in range(count):
        x = rng.standard_normal((batch, features)).astype(np.float32)
        yield {"x": x, "t": (x @ true_w + 0.3).astype(np.float32)}


def test_sgd_matches_the_numpy_reference_step_by_step():
    rng = np.random.default_rng(0)
    w0 = rng.standard_normal((4, 1)).astype(np.float32)
    b0 = np.zeros(1, np.float32)
    trainer = kiln.train(linear_regression(w0, b0), optimizer="sgd", learning_rate=0.1,
                         target="cpu")
    w, b = w0.astype(np.float64), b0.astype(np.float64)
    for step in batches(rng, 5):
        loss = trainer.step(**step)
        diff = step["x"] @ w + b - step["t"]
        assert loss == pytest.approx((diff ** 2).mean(), rel=1e-5)
        grad = 2 * diff / diff.size
        w, b = w - 0.1 * step["x"].T @ grad, b - 0.1 * grad.sum(0)
    params = trainer.params()
    np.testing.assert_allclose(params["w"], w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(params["b"], b, rtol=1e-5, atol=1e-6)
    assert trainer.step_count == 5


def test_adam_reduces_the_loss_of_a_small_mlp():
    rng = np.random.default_rng(1)
    g = kiln.Graph("mlp", seed=7)
    x = g.input("x", [16, 4])
    t = g.input("t", [16, 1])
    h = kiln.nn.Dense(8, activation="tanh")(g, x)
    diff = kiln.nn.Dense(1)(g, h) - t
    g.output("loss", kiln.reduce_mean(diff * diff, [0, 1]))
    before = g.param_values()
    fixed = list(batches(rng, 1, batch=16))[0]
    trainer = kiln.train(g, optimizer="adam", learning_rate=0.05, target="cpu",
                         batches=[fixed] * 20)
    assert len(trainer.losses) == 20
    assert trainer.losses[-1] < 0.5 * trainer.losses[0]
    after = trainer.params()
    assert set(after) == set(before)
    assert all(not np.array_equal(after[name], before[name]) for name in before)


def test_train_errors():
    g = linear_regression(np.ones((4, 1), np.float32), np.zeros(1, np.float32))
    with pytest.raises(kiln.Error, match="unknown optimizer 'rmsprop'"):
        kiln.train(g, optimizer="rmsprop")
    with pytest.raises(kiln.Error, match="nope"):
        kiln.train(g, loss="nope")
    trainer = kiln.train(g, target="cpu")
    with pytest.raises(kiln.Error):
        trainer.step(x=np.ones((8, 4), np.float32))  # no "t"
