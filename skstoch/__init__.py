"""skstoch: scikit-learn compatible stochastic optimization estimators with Cython kernels."""
from .embedding import OrdinalEmbedding
from .linear_model import (
    CGVRClassifier,
    CGVRRegressor,
    ConstrainedLasso,
    ConstrainedLassoCV,
    S3GDClassifier,
    S3GDRegressor,
)
from .metric_learning import LMNNMetric
from .semi_supervised import S3VMClassifier

__version__ = "0.1.0.dev0"

__all__ = [
    "CGVRClassifier",
    "CGVRRegressor",
    "ConstrainedLasso",
    "ConstrainedLassoCV",
    "LMNNMetric",
    "OrdinalEmbedding",
    "S3GDClassifier",
    "S3GDRegressor",
    "S3VMClassifier",
]
