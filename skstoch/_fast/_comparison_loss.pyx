"""Per-comparison losses of ordinal embedding (paper 000 and cblearn's SOE).

Each loss is a function of ``a = d^2(i, j)`` and ``c = d^2(l, k)`` for a comparison that says
``d(i, j) < d(l, k)``; ``loss_grad(a, c, &g_a, &g_c)`` returns the loss and its two partial
derivatives.  The Python hooks ``py_loss_grad`` and ``loss_grad_array`` exist for the tests.
"""
from libc.math cimport exp, log, log1p, sqrt, fabs

import numpy as np

cdef double TINY = 2.2250738585072014e-308


cdef class ComparisonLoss:
    """Base class: loss of one comparison as a function of the two squared distances."""

    cdef double loss_grad(self, double a, double c, double* g_a, double* g_c) noexcept nogil:
        g_a[0] = 0.0
        g_c[0] = 0.0
        return 0.0

    cdef void grad(self, double a, double c, double* g_a, double* g_c) noexcept nogil:
        """The two partial derivatives only (subclasses skip the loss value when cheaper)."""
        self.loss_grad(a, c, g_a, g_c)

    def py_grad(self, double a, double c):
        """(d loss / d a, d loss / d c) through the gradient-only path."""
        cdef double ga, gc
        self.grad(a, c, &ga, &gc)
        return ga, gc

    def py_loss_grad(self, double a, double c):
        """(loss, d loss / d a, d loss / d c) at squared distances a = d^2(i,j), c = d^2(l,k)."""
        cdef double ga, gc, val
        val = self.loss_grad(a, c, &ga, &gc)
        return val, ga, gc

    def loss_grad_array(self, const double[::1] a, const double[::1] c):
        """Vectorised :meth:`py_loss_grad`: three arrays (loss, g_a, g_c)."""
        if a.shape[0] != c.shape[0]:
            raise ValueError(f"a and c must have the same length, got {a.shape[0]} and {c.shape[0]}")
        n = a.shape[0]
        out = np.empty((3, n))
        cdef double[:, ::1] o = out
        cdef Py_ssize_t q
        cdef double ga, gc
        with nogil:
            for q in range(n):
                o[0, q] = self.loss_grad(a[q], c[q], &ga, &gc)
                o[1, q] = ga
                o[2, q] = gc
        return out[0], out[1], out[2]

    def __reduce__(self):
        return (type(self), ())

    def __repr__(self):
        return f"{type(self).__name__}()"


cdef class GNMDSLoss(ComparisonLoss):
    """Hinge ``max(0, margin + a - c)`` (GNMDS, paper eq. 45/56 with the sign made consistent).

    At the kink the "active" branch is used, as in the paper (gradient zero only when
    ``margin + a - c < 0``).
    """

    def __init__(self, double margin=1.0):
        self.margin = margin

    cdef double loss_grad(self, double a, double c, double* g_a, double* g_c) noexcept nogil:
        cdef double z = self.margin + a - c
        if z < 0.0:
            g_a[0] = 0.0
            g_c[0] = 0.0
            return 0.0
        g_a[0] = 1.0
        g_c[0] = -1.0
        return z

    def __reduce__(self):
        return (GNMDSLoss, (self.margin,))

    def __repr__(self):
        return f"GNMDSLoss(margin={self.margin!r})"


cdef class STELoss(ComparisonLoss):
    """STE: ``-log(e^{-a} / (e^{-a} + e^{-c})) = softplus(a - c)`` (paper eq. 48), stable form."""

    cdef double loss_grad(self, double a, double c, double* g_a, double* g_c) noexcept nogil:
        cdef double z = a - c
        cdef double e, s, val
        if z > 0.0:
            e = exp(-z)
            s = 1.0 / (1.0 + e)          # sigmoid(z)
            val = z + log1p(e)
        else:
            e = exp(z)
            s = e / (1.0 + e)
            val = log1p(e)
        g_a[0] = s
        g_c[0] = -s
        return val

    cdef void grad(self, double a, double c, double* g_a, double* g_c) noexcept nogil:
        cdef double z = a - c
        cdef double e, s
        if z > 0.0:
            s = 1.0 / (1.0 + exp(-z))
        else:
            e = exp(z)
            s = e / (1.0 + e)
        g_a[0] = s
        g_c[0] = -s


cdef class TSTELoss(ComparisonLoss):
    """t-STE: ``-log(w_a / (w_a + w_c))`` with ``w = (1 + d^2 / alpha)^{-(alpha + 1) / 2}``
    (paper eq. 49, gradient (58) without its spurious alpha^{-alpha} factor)."""

    def __init__(self, double alpha=1.0):
        self.alpha = alpha

    cdef double loss_grad(self, double a, double c, double* g_a, double* g_c) noexcept nogil:
        cdef double h = 0.5 * (self.alpha + 1.0)
        # log w_a - log w_c computed in log space; p = w_a / (w_a + w_c) = sigmoid(r)
        cdef double r = h * (log1p(c / self.alpha) - log1p(a / self.alpha))
        cdef double e, one_minus_p, val
        if r > 0.0:
            e = exp(-r)
            one_minus_p = e / (1.0 + e)
            val = log1p(e)
        else:
            e = exp(r)
            one_minus_p = 1.0 / (1.0 + e)
            val = -r + log1p(e)
        g_a[0] = one_minus_p * h / (self.alpha + a)
        g_c[0] = -one_minus_p * h / (self.alpha + c)
        return val

    def __reduce__(self):
        return (TSTELoss, (self.alpha,))

    def __repr__(self):
        return f"TSTELoss(alpha={self.alpha!r})"


cdef class CKLLoss(ComparisonLoss):
    """Crowd kernel (Tamuz et al. 2011): ``-log((mu + c) / (2 mu + a + c))``.

    The paper's eq. 47 as printed is algebraically STE; this is the original CKL the paper
    cites.  Arguments of the logarithms are clipped at the smallest normal double (as
    cblearn and van der Maaten's code do) so ``mu = 0`` stays finite.
    """

    def __init__(self, double mu=0.05):
        self.mu = mu

    cdef double loss_grad(self, double a, double c, double* g_a, double* g_c) noexcept nogil:
        cdef double num = self.mu + c
        cdef double den = 2.0 * self.mu + a + c
        if num < TINY:
            num = TINY
        if den < TINY:
            den = TINY
        g_a[0] = 1.0 / den
        g_c[0] = 1.0 / den - 1.0 / num
        return log(den) - log(num)

    def __reduce__(self):
        return (CKLLoss, (self.mu,))

    def __repr__(self):
        return f"CKLLoss(mu={self.mu!r})"


cdef class SOELoss(ComparisonLoss):
    """Soft ordinal embedding (Terada & von Luxburg 2014, cblearn's SOE):
    ``max(0, sqrt(a) + margin - sqrt(c))^2`` on Euclidean (not squared) distances.

    Distances below 1e-7 are clipped in the derivative, as cblearn does.
    """

    def __init__(self, double margin=0.1):
        self.margin = margin

    cdef double loss_grad(self, double a, double c, double* g_a, double* g_c) noexcept nogil:
        cdef double da = sqrt(a)
        cdef double dc = sqrt(c)
        cdef double z = da + self.margin - dc
        if z <= 0.0:
            g_a[0] = 0.0
            g_c[0] = 0.0
            return 0.0
        # d/da (sqrt(a)) = 1 / (2 sqrt(a)); loss = z^2
        g_a[0] = z / (da if da > 1e-7 else 1e-7)
        g_c[0] = -z / (dc if dc > 1e-7 else 1e-7)
        return z * z

    def __reduce__(self):
        return (SOELoss, (self.margin,))

    def __repr__(self):
        return f"SOELoss(margin={self.margin!r})"
