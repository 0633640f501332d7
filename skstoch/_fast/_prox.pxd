"""Proximal operators shared by the kernels (inline, nogil).

``soft_threshold`` is the prox of ``t |v|``; ``enet_prox`` the prox of
``t1 |v| + (shrink^-1 - 1) v^2 / 2``, i.e. the soft threshold followed by the ridge shrink.
"""


cdef inline double soft_threshold(double v, double t) noexcept nogil:
    """v moved toward zero by t >= 0, stopping at zero."""
    if v > t:
        return v - t
    if v < -t:
        return v + t
    return 0.0


cdef inline double enet_prox(double v, double t1, double shrink) noexcept nogil:
    """soft_threshold(v, t1) * shrink (elastic-net prox, shrink = 1 / (1 + eta lam2))."""
    return soft_threshold(v, t1) * shrink
