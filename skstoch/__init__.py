"""skstoch: scikit-learn compatible stochastic optimization estimators with Cython kernels."""

__version__ = "0.1.0.dev0"

from .linear_model import S3GDClassifier, S3GDRegressor

__all__ = ["S3GDClassifier", "S3GDRegressor"]
