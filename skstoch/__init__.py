"""skstoch: scikit-learn compatible stochastic optimization estimators with Cython kernels."""

__version__ = "0.1.0.dev0"

from .embedding import OrdinalEmbedding  # noqa: E402
from .linear_model import (  # noqa: E402
    CGVRClassifier,
    CGVRRegressor,
    ConstrainedLasso,
    ConstrainedLassoCV,
    S3GDClassifier,
    S3GDRegressor,
)
from .metric_learning import LMNNMetric  # noqa: E402
from .semi_supervised import S3VMClassifier  # noqa: E402

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
    "__version__",
]
