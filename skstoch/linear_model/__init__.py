"""Linear models: CGVR (paper 004), S3GD (paper 002) and the constrained Lasso (paper 001)."""
from ._constrained_lasso import ConstrainedLasso, ConstrainedLassoCV

__all__ = ["ConstrainedLasso", "ConstrainedLassoCV"]
from ._s3gd import S3GDClassifier, S3GDRegressor

__all__ = ["S3GDClassifier", "S3GDRegressor"]
from ._cgvr import CGVRClassifier, CGVRRegressor

__all__ = ["CGVRClassifier", "CGVRRegressor"]
