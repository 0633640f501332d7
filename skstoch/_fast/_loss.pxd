# Margin losses shared by every linear kernel (CGVR, S3GD, S3VM's linear head, ...).
#
# p is the prediction x.w + b, y the target (+1/-1 for classification losses).
# dloss and d2loss are derivatives with respect to p.

cdef class MarginLoss:
    cdef double loss(self, double p, double y) noexcept nogil
    cdef double loss_change(self, double p, double dp, double y) noexcept nogil
    cdef double dloss(self, double p, double y) noexcept nogil
    cdef double d2loss(self, double p, double y) noexcept nogil


cdef class LogLoss(MarginLoss):
    pass


cdef class SquaredHinge(MarginLoss):
    cdef readonly double threshold


cdef class Hinge(MarginLoss):
    cdef readonly double threshold


cdef class SmoothHinge(MarginLoss):
    cdef readonly double gamma


cdef class SquaredError(MarginLoss):
    pass


cdef inline double sum_along_line(MarginLoss loss, const double* m, const double* dm,
                                  const double* y, const double* s, Py_ssize_t n, double t,
                                  bint with_value, double* d1, double* d2) noexcept nogil:
    """Weighted loss along the margin line ``m + t dm``, in one pass without temporaries.

    Returns ``sum_i s_i loss(m_i + t dm_i, y_i)`` (0 when ``with_value`` is False: one loss
    evaluation less per row) and writes its first derivative in t,
    ``sum_i s_i loss'(m_i + t dm_i, y_i) dm_i``, to ``d1[0]`` and, when ``d2`` is not NULL,
    the second, ``sum_i s_i loss''(m_i + t dm_i, y_i) dm_i^2``, to ``d2[0]``.  Inline, so that
    a caller's constant ``with_value`` / ``d2`` remove the unused work from the loop.
    """
    cdef double value = 0.0, a1 = 0.0, a2 = 0.0, q
    cdef Py_ssize_t i
    for i in range(n):
        q = m[i] + t * dm[i]
        if with_value:
            value += s[i] * loss.loss(q, y[i])
        a1 += s[i] * loss.dloss(q, y[i]) * dm[i]
        if d2 != NULL:
            a2 += s[i] * loss.d2loss(q, y[i]) * dm[i] * dm[i]
    d1[0] = a1
    if d2 != NULL:
        d2[0] = a2
    return value
