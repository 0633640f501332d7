"""Utilities shared by the estimators."""
from ._dataset import make_dataset
from ._random import seed_from_random_state

__all__ = ["make_dataset", "seed_from_random_state"]
