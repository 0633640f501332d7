"""Margin losses as cdef classes: ``loss``, ``dloss`` and ``d2loss`` with respect to the
prediction p, callable from nogil kernels; ``py_*`` hooks and array methods for Python.

They stay finite at extreme margins (the log loss never evaluates exp of a positive number, so
it is exact for any finite p; the others are polynomial and finite while p**2 is).
"""
import numpy as np

from libc.math cimport exp, expm1, log1p, fabs


cdef class MarginLoss:
    """Base class: subclasses implement ``loss``, ``dloss`` and ``d2loss``."""

    #: whether ``d2loss`` is a true second derivative everywhere (False: almost everywhere)
    twice_differentiable = True
    #: whether ``dloss`` is a gradient (False: a subgradient)
    differentiable = True

    cdef double loss(self, double p, double y) noexcept nogil:
        return 0.0

    cdef double loss_change(self, double p, double dp, double y) noexcept nogil:
        """``loss(p + dp, y) - loss(p, y)``, to the rounding of the change itself where the
        subclass can (near a minimum the change is far below the loss, and the plain
        difference keeps only the loss's rounding)."""
        return self.loss(p + dp, y) - self.loss(p, y)

    cdef double dloss(self, double p, double y) noexcept nogil:
        return 0.0

    cdef double d2loss(self, double p, double y) noexcept nogil:
        return 0.0

    def py_loss(self, double p, double y):
        """Loss at prediction p and target y."""
        return self.loss(p, y)

    def py_loss_change(self, double p, double dp, double y):
        """``loss(p + dp, y) - loss(p, y)`` (see ``loss_change``)."""
        return self.loss_change(p, dp, y)

    def py_dloss(self, double p, double y):
        """Derivative (or subgradient) of the loss with respect to p."""
        return self.dloss(p, y)

    def py_d2loss(self, double p, double y):
        """Second derivative with respect to p (almost everywhere for piecewise losses)."""
        return self.d2loss(p, y)

    def loss_array(self, const double[::1] p, const double[::1] y):
        """Elementwise losses as an array."""
        _check_same_length(p, y)
        cdef double[::1] out = np.empty(p.shape[0])
        cdef Py_ssize_t i
        with nogil:
            for i in range(p.shape[0]):
                out[i] = self.loss(p[i], y[i])
        return np.asarray(out)

    def loss_change_array(self, const double[::1] p, const double[::1] dp,
                          const double[::1] y):
        """Elementwise ``loss_change(p, dp, y)`` as an array."""
        _check_same_length(p, y)
        _check_same_length(dp, y)
        cdef double[::1] out = np.empty(p.shape[0])
        cdef Py_ssize_t i
        with nogil:
            for i in range(p.shape[0]):
                out[i] = self.loss_change(p[i], dp[i], y[i])
        return np.asarray(out)

    def dloss_array(self, const double[::1] p, const double[::1] y):
        """Elementwise derivatives with respect to p as an array."""
        _check_same_length(p, y)
        cdef double[::1] out = np.empty(p.shape[0])
        cdef Py_ssize_t i
        with nogil:
            for i in range(p.shape[0]):
                out[i] = self.dloss(p[i], y[i])
        return np.asarray(out)

    def d2loss_array(self, const double[::1] p, const double[::1] y):
        """Elementwise second derivatives with respect to p as an array."""
        _check_same_length(p, y)
        cdef double[::1] out = np.empty(p.shape[0])
        cdef Py_ssize_t i
        with nogil:
            for i in range(p.shape[0]):
                out[i] = self.d2loss(p[i], y[i])
        return np.asarray(out)

    def weighted_loss_dloss(self, const double[::1] p, const double[::1] y,
                            const double[::1] sample_weight, double[::1] out_dloss):
        """One pass: return sum_i s_i loss(p_i, y_i) and write s_i dloss(p_i, y_i) to out_dloss.

        This is the per-sample half of a full objective/gradient evaluation; the caller forms
        ``X.T @ out_dloss`` with BLAS or sparse products.
        """
        _check_same_length(p, y)
        _check_same_length(p, sample_weight)
        _check_same_length(p, out_dloss)
        cdef double total = 0.0
        cdef Py_ssize_t i
        with nogil:
            for i in range(p.shape[0]):
                total += sample_weight[i] * self.loss(p[i], y[i])
                out_dloss[i] = sample_weight[i] * self.dloss(p[i], y[i])
        return total

    def along_line(self, const double[::1] p, const double[::1] z, const double[::1] y,
                   const double[::1] sample_weight, double t, bint with_value=True):
        """At the margins ``q = p + t z``, one nogil pass: ``(sum_i s_i loss(q_i, y_i),
        sum_i s_i dloss(q_i, y_i) z_i, sum_i s_i d2loss(q_i, y_i) z_i^2)``, the weighted loss
        and its first two derivatives in t along the line (no temporary arrays); the value is
        0 when ``with_value`` is False (one loss evaluation less per row)."""
        _check_same_length(p, z)
        _check_same_length(p, y)
        _check_same_length(p, sample_weight)
        cdef double value = 0.0, d1 = 0.0, d2 = 0.0
        if p.shape[0] == 0:
            return value, d1, d2
        with nogil:
            value = sum_along_line(self, &p[0], &z[0], &y[0], &sample_weight[0], p.shape[0],
                                   t, with_value, &d1, &d2)
        return value, d1, d2

    def __reduce__(self):
        return (type(self), ())

    def __repr__(self):
        return f"{type(self).__name__}()"


cdef _check_same_length(const double[::1] a, const double[::1] b):
    if a.shape[0] != b.shape[0]:
        raise ValueError(f"arrays of different lengths: {a.shape[0]} and {b.shape[0]}")


cdef inline double _sigmoid_neg(double z) noexcept nogil:
    """1 / (1 + e^z) without overflow."""
    cdef double e
    if z > 0:
        e = exp(-z)
        return e / (1.0 + e)
    return 1.0 / (1.0 + exp(z))


cdef class LogLoss(MarginLoss):
    """Logistic loss log(1 + exp(-y p)) for y in {-1, +1}."""

    cdef double loss(self, double p, double y) noexcept nogil:
        cdef double z = y * p
        if z > 0:
            return log1p(exp(-z))
        return -z + log1p(exp(z))

    cdef double loss_change(self, double p, double dp, double y) noexcept nogil:
        # log(1 + e^-(z + dz)) - log(1 + e^-z) = log1p(sigmoid(-z) expm1(-dz)), z = y p
        cdef double dz = y * dp
        if dz < -700.0:    # expm1 would overflow; the change is then far above the rounding
            return self.loss(p + dp, y) - self.loss(p, y)
        return log1p(_sigmoid_neg(y * p) * expm1(-dz))

    cdef double dloss(self, double p, double y) noexcept nogil:
        return -y * _sigmoid_neg(y * p)

    cdef double d2loss(self, double p, double y) noexcept nogil:
        cdef double s = _sigmoid_neg(y * p)
        return s * (1.0 - s) * y * y


cdef class SquaredHinge(MarginLoss):
    """Squared hinge max(0, threshold - y p)^2 (LinearSVC's loss, no factor 1/2)."""

    twice_differentiable = False

    def __init__(self, double threshold=1.0):
        self.threshold = threshold

    cdef double loss(self, double p, double y) noexcept nogil:
        cdef double r = self.threshold - y * p
        return r * r if r > 0 else 0.0

    cdef double loss_change(self, double p, double dp, double y) noexcept nogil:
        cdef double r0 = self.threshold - y * p, r1 = self.threshold - y * (p + dp)
        if r0 > 0 and r1 > 0:      # r1^2 - r0^2 = (r1 - r0)(r1 + r0), r1 - r0 = -y dp
            return -y * dp * (r0 + r1)
        return self.loss(p + dp, y) - self.loss(p, y)

    cdef double dloss(self, double p, double y) noexcept nogil:
        cdef double r = self.threshold - y * p
        return -2.0 * y * r if r > 0 else 0.0

    cdef double d2loss(self, double p, double y) noexcept nogil:
        return 2.0 * y * y if self.threshold - y * p > 0 else 0.0

    def __reduce__(self):
        return (SquaredHinge, (self.threshold,))

    def __repr__(self):
        return f"SquaredHinge(threshold={self.threshold!r})"


cdef class Hinge(MarginLoss):
    """Hinge max(0, threshold - y p); ``dloss`` is the subgradient -y on the active side, 0 at
    and beyond the kink; ``d2loss`` is 0 (almost everywhere)."""

    twice_differentiable = False
    differentiable = False

    def __init__(self, double threshold=1.0):
        self.threshold = threshold

    cdef double loss(self, double p, double y) noexcept nogil:
        cdef double r = self.threshold - y * p
        return r if r > 0 else 0.0

    cdef double loss_change(self, double p, double dp, double y) noexcept nogil:
        if self.threshold - y * p > 0 and self.threshold - y * (p + dp) > 0:
            return -y * dp
        return self.loss(p + dp, y) - self.loss(p, y)

    cdef double dloss(self, double p, double y) noexcept nogil:
        return -y if self.threshold - y * p > 0 else 0.0

    cdef double d2loss(self, double p, double y) noexcept nogil:
        return 0.0

    def __reduce__(self):
        return (Hinge, (self.threshold,))

    def __repr__(self):
        return f"Hinge(threshold={self.threshold!r})"


cdef class SmoothHinge(MarginLoss):
    """Smoothed hinge (Shalev-Shwartz & Zhang): with z = y p,
    0 if z >= 1; 1 - z - gamma/2 if z <= 1 - gamma; (1 - z)^2 / (2 gamma) between."""

    twice_differentiable = False

    def __init__(self, double gamma=1.0):
        if not gamma > 0:
            raise ValueError(f"gamma must be > 0, got {gamma}")
        self.gamma = gamma

    cdef double loss(self, double p, double y) noexcept nogil:
        cdef double z = y * p
        if z >= 1.0:
            return 0.0
        if z <= 1.0 - self.gamma:
            return 1.0 - z - 0.5 * self.gamma
        return (1.0 - z) * (1.0 - z) / (2.0 * self.gamma)

    cdef double dloss(self, double p, double y) noexcept nogil:
        cdef double z = y * p
        if z >= 1.0:
            return 0.0
        if z <= 1.0 - self.gamma:
            return -y
        return -y * (1.0 - z) / self.gamma

    cdef double d2loss(self, double p, double y) noexcept nogil:
        cdef double z = y * p
        if 1.0 - self.gamma < z < 1.0:
            return y * y / self.gamma
        return 0.0

    def __reduce__(self):
        return (SmoothHinge, (self.gamma,))

    def __repr__(self):
        return f"SmoothHinge(gamma={self.gamma!r})"


cdef class SquaredError(MarginLoss):
    """Squared error (p - y)^2 / 2."""

    cdef double loss(self, double p, double y) noexcept nogil:
        cdef double r = p - y
        return 0.5 * r * r

    cdef double loss_change(self, double p, double dp, double y) noexcept nogil:
        return dp * (p - y + 0.5 * dp)

    cdef double dloss(self, double p, double y) noexcept nogil:
        return p - y

    cdef double d2loss(self, double p, double y) noexcept nogil:
        return 1.0
