"""skstoch: scikit-learn compatible stochastic optimization estimators with Cython kernels."""

__version__ = "0.1.0.dev0"

from .embedding import OrdinalEmbedding

__all__ = ["OrdinalEmbedding"]
