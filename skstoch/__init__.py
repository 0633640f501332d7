"""skstoch: scikit-learn compatible stochastic optimization estimators with Cython kernels."""
from .linear_model import ConstrainedLasso, ConstrainedLassoCV

__version__ = "0.1.0.dev0"

from .semi_supervised import S3VMClassifier

__all__ = ["S3VMClassifier"]
from .metric_learning import LMNNMetric

__all__ = ["LMNNMetric"]
from .embedding import OrdinalEmbedding

__all__ = ["OrdinalEmbedding"]
__all__ = [
    "ConstrainedLasso",
    "ConstrainedLassoCV",
]
from .linear_model import S3GDClassifier, S3GDRegressor

__all__ = ["S3GDClassifier", "S3GDRegressor"]
from .linear_model import CGVRClassifier, CGVRRegressor

__version__ = "0.1.0.dev0"

__all__ = ["CGVRClassifier", "CGVRRegressor"]
