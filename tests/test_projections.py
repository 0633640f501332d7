"""Projections against brute-force references (no convex solver needed)."""
import numpy as np
import pytest
from scipy.optimize import minimize_scalar

from skstoch._solvers import project_l1_ball, project_psd


def l1_projection_reference(v, radius):
    """Bisection-free reference: theta minimising the dual, found by a bounded scalar search
    on the piecewise-linear equation sum(max(|v| - theta, 0)) = radius."""
    v = np.asarray(v, dtype=float)
    if np.abs(v).sum() <= radius:
        return v.copy()
    if radius == 0:
        return np.zeros_like(v)
    excess = lambda theta: (np.maximum(np.abs(v) - theta, 0).sum() - radius) ** 2
    theta = minimize_scalar(excess, bounds=(0, np.abs(v).max()), method="bounded",
                            options={"xatol": 1e-14}).x
    return np.sign(v) * np.maximum(np.abs(v) - theta, 0)


def test_l1_projection_matches_reference_on_random_inputs():
    rng = np.random.RandomState(0)
    for trial in range(200):
        d = rng.randint(1, 40)
        v = rng.randn(d) * rng.choice([0.01, 1, 100])
        radius = rng.uniform(0, 1.2) * np.abs(v).sum()
        w = project_l1_ball(v, radius)
        np.testing.assert_allclose(w, l1_projection_reference(v, radius), atol=1e-7 * max(1, radius))
        assert np.abs(w).sum() <= radius * (1 + 1e-12) + 1e-12


def test_l1_projection_is_the_closest_feasible_point():
    # optimality: no random feasible point is closer than the projection
    rng = np.random.RandomState(1)
    v = rng.randn(6)
    radius = 1.0
    w = project_l1_ball(v, radius)
    best = np.linalg.norm(v - w)
    for _ in range(5000):
        z = rng.randn(6)
        z *= rng.uniform(0, radius) / np.abs(z).sum()
        assert np.linalg.norm(v - z) >= best - 1e-12


def test_l1_projection_edge_cases():
    v = np.array([0.3, -0.2, 0.1])
    np.testing.assert_array_equal(project_l1_ball(v, 1.0), v)  # already feasible: unchanged
    np.testing.assert_array_equal(project_l1_ball(v, 0.6), v)  # exactly on the boundary
    np.testing.assert_array_equal(project_l1_ball(v, 0.0), np.zeros(3))  # radius 0
    np.testing.assert_array_equal(project_l1_ball(v, np.inf), v)
    ties = np.array([1.0, -1.0, 1.0, -1.0])
    np.testing.assert_allclose(project_l1_ball(ties, 2.0), ties / 2)
    np.testing.assert_allclose(project_l1_ball(np.array([-5.0]), 2.0), [-2.0])
    assert project_l1_ball(np.empty(0), 1.0).shape == (0,)
    matrix = np.array([[3.0, 0.0], [0.0, -1.0]])
    np.testing.assert_allclose(project_l1_ball(matrix, 2.0), [[2.0, 0.0], [0.0, 0.0]])
    original = v.copy()
    project_l1_ball(v, 0.1)
    np.testing.assert_array_equal(v, original)  # input untouched
    with pytest.raises(ValueError, match="radius"):
        project_l1_ball(v, -1.0)


def psd_projection_reference(M, eps):
    S = (M + M.T) / 2
    w, V = np.linalg.eig(S)  # general solver, not eigh
    w, V = w.real, V.real
    V /= np.linalg.norm(V, axis=0)
    return (V * np.maximum(w, eps)) @ V.T


@pytest.mark.parametrize("radius", [1e-17, 1e-200, 5e-324])
def test_l1_projection_onto_a_radius_below_the_rounding_of_the_entries(radius):
    # with u_0 - radius rounding to u_0 the sort-based search found no threshold and returned
    # v itself, 17 to 20 orders of magnitude outside the ball (ConstrainedLasso with its
    # stochastic solvers, and ConstrainedLassoCV then picked such a radius as the best)
    v = np.array([1.0, -0.5, 0.25, 0.0])
    w = project_l1_ball(v, radius)
    assert np.abs(w).sum() <= radius
    assert np.all(w * v >= 0)


def test_constrained_lasso_stays_in_a_tiny_ball():
    import warnings

    from skstoch import ConstrainedLasso
    rng = np.random.RandomState(0)
    X = rng.randn(100, 5)
    y = X @ np.array([1.0, -1.0, 0.5, 0.0, 0.0]) + 0.1 * rng.randn(100)
    for kw in ({"working_set": False}, {"solver": "epro_sgd"}, {"solver": "epro_svrg"},
               {"solver": "oneproj"}, {"solver": "epro_orda"}):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")     # a budget this short may not converge
            est = ConstrainedLasso(radius=1e-17, max_iter=400, random_state=0, **kw).fit(X, y)
        assert np.abs(est.coef_).sum() <= 1e-17, kw


def test_psd_projection_matches_reference_and_is_feasible():
    rng = np.random.RandomState(2)
    for _ in range(50):
        d = rng.randint(1, 8)
        M = rng.randn(d, d)
        eps = rng.choice([0.0, 1e-3, 0.5])
        A, lowest = project_psd(M, eps)
        np.testing.assert_allclose(A, psd_projection_reference(M, eps), atol=1e-10)
        np.testing.assert_allclose(A, A.T)
        assert np.linalg.eigvalsh(A).min() >= eps - 1e-10
        assert lowest == pytest.approx(np.linalg.eigvalsh((M + M.T) / 2).min())


def test_psd_projection_is_closest_among_random_feasible_points():
    rng = np.random.RandomState(3)
    M = rng.randn(3, 3)
    A, _ = project_psd(M, 0.1)
    best = np.linalg.norm(M - A)
    for _ in range(2000):
        B = rng.randn(3, 3)
        B = B @ B.T + 0.1 * np.eye(3)
        assert np.linalg.norm(M - B) >= best - 1e-12


def test_psd_projection_edge_cases():
    I = np.eye(3)
    A, lowest = project_psd(I, 0.5)
    np.testing.assert_array_equal(A, I)  # already feasible
    assert lowest == 1.0
    A, _ = project_psd(-I, 0.0)
    np.testing.assert_allclose(A, np.zeros((3, 3)), atol=1e-15)
    with pytest.raises(ValueError, match="square"):
        project_psd(np.ones((2, 3)))
