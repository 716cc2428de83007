"""Train a small recurrent network written with a plain Python loop over time.

The model is ordinary numpy; ad.gradient differentiates the loop by running
a reversed loop in its generated adjoint. Run: python examples/train_rnn.py
"""

from dataclasses import dataclass

import numpy as np

import ad


@dataclass
class RNN:
    Wx: np.ndarray
    Wh: np.ndarray
    b: np.ndarray
    Wy: np.ndarray


def predict(model, xs):
    """Run the RNN over the sequence xs (one row per time step); return the last output."""
    h = np.zeros(model.Wh.shape[0])
    for x in xs:
        h = np.tanh(model.Wx @ x + model.Wh @ h + model.b)
    return model.Wy @ h


def loss(model, batch):
    total = 0.0
    for xs, target in batch:
        err = predict(model, xs) - target
        total = total + np.sum(err**2)
    return total / len(batch)


def make_data(rng, n, steps=8):
    """Sequences of 2 features; the target is the running mean of feature 0 minus feature 1."""
    data = []
    for _ in range(n):
        xs = rng.normal(size=(steps, 2))
        data.append((xs, np.array([np.mean(xs[:, 0] - xs[:, 1])])))
    return data


def sgd_step(model, grad, lr):
    return RNN(*(getattr(model, f) - lr * getattr(grad, f) for f in ("Wx", "Wh", "b", "Wy")))


def main(epochs=40, seed=0):
    rng = np.random.default_rng(seed)
    hidden = 8
    model = RNN(
        Wx=0.5 * rng.normal(size=(hidden, 2)),
        Wh=0.1 * rng.normal(size=(hidden, hidden)),
        b=np.zeros(hidden),
        Wy=0.5 * rng.normal(size=(1, hidden)),
    )
    data = make_data(rng, 16)
    first = loss(model, data)
    for epoch in range(epochs):
        # data is captured, not an argument: no gradient is computed for it.
        # withgradient returns the loss too: the loss of this epoch's model, before its step.
        value, (grad,) = ad.withgradient(lambda m: loss(m, data), model)
        if epoch % 20 == 0:
            print(f"epoch {epoch:3d}  loss {value:.4f}")
        model = sgd_step(model, grad, lr=0.2)
    last = loss(model, data)
    print(f"loss {first:.4f} -> {last:.4f}")
    return first, last


if __name__ == "__main__":
    first, last = main()
    assert last < 0.5 * first
