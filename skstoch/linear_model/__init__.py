"""Linear models: CGVR (paper 004), S3GD (paper 002) and the constrained Lasso (paper 001)."""
from ._cgvr import CGVRClassifier, CGVRRegressor
from ._constrained_lasso import ConstrainedLasso, ConstrainedLassoCV
from ._s3gd import S3GDClassifier, S3GDRegressor

__all__ = [
    "CGVRClassifier",
    "CGVRRegressor",
    "ConstrainedLasso",
    "ConstrainedLassoCV",
    "S3GDClassifier",
    "S3GDRegressor",
]
