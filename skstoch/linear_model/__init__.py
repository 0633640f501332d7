"""Linear models: CGVR (paper 004), S3GD (paper 002) and the constrained Lasso (paper 001)."""
from ._cgvr import CGVRClassifier, CGVRRegressor

__all__ = ["CGVRClassifier", "CGVRRegressor"]
