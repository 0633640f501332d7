"""Margin losses: values, derivatives vs finite differences, stability, pickling."""
import pickle

import numpy as np
import pytest

from skstoch._fast._loss import Hinge, LogLoss, SmoothHinge, SquaredError, SquaredHinge

ALL_LOSSES = [LogLoss(), SquaredHinge(), SquaredHinge(0.5), Hinge(), Hinge(0.0), SmoothHinge(),
              SmoothHinge(0.3), SquaredError()]


@pytest.mark.parametrize(
    "loss, p, y, value, derivative",
    [
        (LogLoss(), 0.0, 1.0, np.log(2.0), -0.5),
        (LogLoss(), 2.0, -1.0, np.log1p(np.exp(2.0)), 1.0 / (1.0 + np.exp(-2.0))),
        (SquaredHinge(), 0.5, 1.0, 0.25, -1.0),
        (SquaredHinge(), 2.0, 1.0, 0.0, 0.0),
        (Hinge(), -1.0, 1.0, 2.0, -1.0),
        (Hinge(), 3.0, -1.0, 4.0, 1.0),
        (Hinge(), 1.5, 1.0, 0.0, 0.0),
        (SmoothHinge(), 0.5, 1.0, 0.125, -0.5),
        (SmoothHinge(), -1.0, 1.0, 1.5, -1.0),
        (SquaredError(), 3.0, 1.0, 2.0, 2.0),
    ],
)
def test_loss_table(loss, p, y, value, derivative):
    assert loss.py_loss(p, y) == pytest.approx(value, rel=1e-14)
    assert loss.py_dloss(p, y) == pytest.approx(derivative, rel=1e-14)


@pytest.mark.parametrize("loss", ALL_LOSSES, ids=repr)
def test_derivatives_match_finite_differences(loss):
    h = 1e-6
    rng = np.random.RandomState(0)
    for p in rng.uniform(-3, 3, 60):
        for y in ([-1.0, 1.0] if not isinstance(loss, SquaredError) else [-0.7, 1.3]):
            # stay away from kinks where the one-sided derivatives differ
            kinks = [getattr(loss, "threshold", 1.0) * y, (1 - getattr(loss, "gamma", 0)) * y, y]
            if min(abs(p - k) for k in kinks) < 1e-3:
                continue
            fd = (loss.py_loss(p + h, y) - loss.py_loss(p - h, y)) / (2 * h)
            assert loss.py_dloss(p, y) == pytest.approx(fd, rel=1e-6, abs=1e-7)
            fd2 = (loss.py_dloss(p + h, y) - loss.py_dloss(p - h, y)) / (2 * h)
            assert loss.py_d2loss(p, y) == pytest.approx(fd2, rel=1e-5, abs=1e-6)


@pytest.mark.parametrize("loss", ALL_LOSSES, ids=repr)
def test_finite_at_extreme_margins(loss):
    for p in [-1e4, 1e4, -1e150, 1e150]:
        for y in [-1.0, 1.0]:
            assert np.isfinite(loss.py_dloss(p, y))
            assert np.isfinite(loss.py_d2loss(p, y))
            if abs(p) <= 1e4 or not isinstance(loss, (SquaredError, SquaredHinge)):
                assert np.isfinite(loss.py_loss(p, y))


def test_log_loss_is_exact_in_the_tails():
    loss = LogLoss()
    assert loss.py_loss(-1e4, 1.0) == 1e4
    assert loss.py_loss(1e4, 1.0) == 0.0
    assert loss.py_loss(40.0, 1.0) == pytest.approx(np.exp(-40.0), rel=1e-12)
    assert loss.py_dloss(-1e4, 1.0) == -1.0
    assert loss.py_dloss(40.0, 1.0) == pytest.approx(-np.exp(-40.0), rel=1e-12)


@pytest.mark.parametrize("loss", ALL_LOSSES, ids=repr)
def test_array_methods_match_scalar_hooks(loss):
    rng = np.random.RandomState(1)
    p = rng.randn(50)
    y = np.sign(rng.randn(50))
    s = rng.rand(50)
    np.testing.assert_array_equal(loss.loss_array(p, y), [loss.py_loss(a, b) for a, b in zip(p, y)])
    np.testing.assert_array_equal(loss.dloss_array(p, y), [loss.py_dloss(a, b) for a, b in zip(p, y)])
    np.testing.assert_array_equal(loss.d2loss_array(p, y),
                                  [loss.py_d2loss(a, b) for a, b in zip(p, y)])
    dp = 1e-3 * rng.randn(50)
    np.testing.assert_array_equal(loss.loss_change_array(p, dp, y),
                                  [loss.py_loss_change(a, b, c) for a, b, c in zip(p, dp, y)])
    out = np.empty(50)
    total = loss.weighted_loss_dloss(p, y, s, out)
    assert total == pytest.approx(np.sum(s * loss.loss_array(p, y)), rel=1e-13)
    np.testing.assert_allclose(out, s * loss.dloss_array(p, y), rtol=1e-15)
    with pytest.raises(ValueError, match="different lengths"):
        loss.loss_array(p, y[:3])
    z, t = rng.randn(50), -0.7
    value, d1, d2 = loss.along_line(p, z, y, s, t)
    q = p + t * z
    assert value == pytest.approx(np.sum(s * loss.loss_array(q, y)), rel=1e-13)
    assert d1 == pytest.approx(np.sum(s * loss.dloss_array(q, y) * z), rel=1e-12, abs=1e-14)
    assert d2 == pytest.approx(np.sum(s * loss.d2loss_array(q, y) * z * z), rel=1e-12, abs=1e-14)
    with pytest.raises(ValueError, match="different lengths"):
        loss.along_line(p, z[:3], y, s, t)


@pytest.mark.parametrize("loss", ALL_LOSSES, ids=repr)
def test_losses_pickle_with_their_parameters(loss):
    clone = pickle.loads(pickle.dumps(loss))
    assert type(clone) is type(loss)
    assert repr(clone) == repr(loss)
    assert clone.py_loss(0.3, -1.0) == loss.py_loss(0.3, -1.0)


def test_smooth_hinge_rejects_bad_gamma():
    with pytest.raises(ValueError, match="gamma"):
        SmoothHinge(0.0)
