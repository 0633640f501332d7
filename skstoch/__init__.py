"""skstoch: scikit-learn compatible stochastic optimization estimators with Cython kernels."""
from .linear_model import ConstrainedLasso, ConstrainedLassoCV

__version__ = "0.1.0.dev0"

__all__ = [
    "ConstrainedLasso",
    "ConstrainedLassoCV",
]
