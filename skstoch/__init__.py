"""skstoch: scikit-learn compatible stochastic optimization estimators with Cython kernels."""
from .linear_model import CGVRClassifier, CGVRRegressor

__version__ = "0.1.0.dev0"

__all__ = ["CGVRClassifier", "CGVRRegressor"]
