"""A strong-Wolfe line search on a callable ``phi(a) -> (value, derivative)`` (used by the
multinomial CGVR driver and by full-batch CG on Dask data; the in-memory binary driver runs
the same search in its kernel, ``skstoch._fast._cgvr.line_search_margins``)."""
import numpy as np

__all__ = ["strong_wolfe"]


def strong_wolfe(phi, phi0, dphi0, c1, c2, a_init, max_iter, zoom_iter, a_max,
                 lookahead=False):
    """The binary kernel's strong-Wolfe search (Nocedal & Wright Alg. 3.5 and 3.6 with the
    paper's midpoint zoom); returns (step, failed): the lowest phi seen when the budget runs
    out (0 if none decreased phi).

    With ``lookahead``, ``phi`` is called as ``phi(a, ahead)``, where ``ahead`` are the steps
    the search may try next (the expansion's doublings, the zoom's next midpoints two levels
    down), so that a distributed ``phi`` can evaluate them in the same round trip."""
    def value(a, ahead):
        return phi(a, ahead) if lookahead else phi(a)

    a_prev, f_prev = 0.0, phi0
    a = min(a_init, a_max)
    best_a, best_f = 0.0, phi0
    for i in range(max_iter):
        fa, da = value(a, [min(2.0 * a, a_max), min(4.0 * a, a_max)])
        if fa < best_f:
            best_a, best_f = a, fa
        if not np.isfinite(fa) or fa > phi0 + c1 * a * dphi0 or (i > 0 and fa >= f_prev):
            lo, f_lo, hi = a_prev, f_prev, a
            break
        if abs(da) <= -c2 * dphi0:
            return a, False
        if da >= 0:
            lo, f_lo, hi = a, fa, a_prev
            break
        if a >= a_max:
            return a, False
        a_prev, f_prev = a, fa
        a = min(2.0 * a, a_max)
    else:
        return best_a, True
    for _ in range(zoom_iter):
        mid = 0.5 * (lo + hi)
        quarters = [0.5 * (lo + mid), 0.5 * (mid + hi)]
        fm, dm = value(mid, quarters + [0.5 * (q + e) for q in quarters for e in (lo, mid, hi)])
        if fm < best_f:
            best_a, best_f = mid, fm
        if not np.isfinite(fm) or fm > phi0 + c1 * mid * dphi0 or fm >= f_lo:
            hi = mid
        else:
            if abs(dm) <= -c2 * dphi0:
                return mid, False
            if dm * (hi - lo) >= 0:
                hi = lo
            lo, f_lo = mid, fm
    return best_a, True
