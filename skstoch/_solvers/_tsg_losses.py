"""Losses of the TSGS3VM objective (paper 003) as numpy functions of the decision values.

Each returns the loss values and the (sub)gradient in the decision value, elementwise, so the
driver forms the functional-gradient coefficients of a batch from them.
"""
import numpy as np


def labeled_hinge(r, y):
    """Hinge loss max(0, 1 - y r) and its subgradient in r (0 at the kink y r = 1, as the paper)."""
    margin = y * r
    active = margin < 1.0
    return np.where(active, 1.0 - margin, 0.0), np.where(active, -y, 0.0)


def unlabeled_loss(name, r, ramp_s=-0.3):
    """Unlabeled loss u(r) and its (sub)gradient, with the paper's Table 2 corrected.

    'hinge' (symmetric hinge, SHG): max(0, 1 - |r|), u' = -sign(r) on |r| < 1 (the paper prints
    -1, which pushes every unlabeled point to the positive side), u'(0) = 0.
    'squared_hinge' (SSHG): 1/2 max(0, 1 - |r|)^2, u' = (|r| - 1) sign(r) on |r| < 1.
    'ramp': symmetric ramp R_s(r) + R_s(-r), R_s(t) = max(0, 1 - t) - max(0, s - t), s < 0
    (Collobert et al. 2006); u' = -sign(r) on |s| < |r| < 1, else 0.
    'exp' (the paper's DA): exp(-5 r^2), u' = -10 r exp(-5 r^2).
    """
    a = np.abs(r)
    sgn = np.sign(r)
    if name == "hinge":
        inside = a < 1.0
        return np.where(inside, 1.0 - a, 0.0), np.where(inside, -sgn, 0.0)
    if name == "squared_hinge":
        gap = np.maximum(0.0, 1.0 - a)
        return 0.5 * gap * gap, -gap * sgn
    if name == "ramp":
        def ramp(t):
            return np.maximum(0.0, 1.0 - t) - np.maximum(0.0, ramp_s - t)

        value = ramp(r) + ramp(-r)
        slope = np.where((a > -ramp_s) & (a < 1.0), -sgn, 0.0)
        return value, slope
    if name == "exp":
        e = np.exp(-5.0 * r * r)
        return e, -10.0 * r * e
    raise ValueError(f"unknown unlabeled_loss {name!r}")


def manifold_edge_terms(f_src, f_dst, weight):
    """Manifold term on a batch of B edges and its gradient coefficients.

    Returns ``weight * mean_b sum_h (f_src - f_dst)^2`` (the unbiased estimate of
    ``weight * mean_{E} (f(x_a) - f(x_b))^2``) and ``coef`` (B, K) such that its functional
    gradient is ``sum_b coef_b (k(x_{src_b}, .) - k(x_{dst_b}, .))``:
    ``coef = 2 weight (f_src - f_dst) / B``.
    """
    diff = f_src - f_dst
    B = diff.shape[0]
    return weight * float(np.sum(diff * diff)) / B, (2.0 * weight / B) * diff
