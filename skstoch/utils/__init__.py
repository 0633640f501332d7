"""Utilities shared by the estimators."""
from ._atomic import AtomicFitMixin, atomic_fit
from ._dataset import make_dataset
from ._random import seed_from_random_state

__all__ = ["AtomicFitMixin", "atomic_fit", "make_dataset", "seed_from_random_state"]
