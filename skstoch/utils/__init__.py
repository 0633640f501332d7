"""Utilities shared by the estimators."""
from ._atomic import AtomicFitMixin, atomic_fit
from ._dataset import make_dataset
from ._random import seed_from_random_state
from ._threads import single_thread_blas
from ._validation import (canonical_csr, check_allocation, check_sample_weight,
                          check_sparse_integrity, reject_string_input, validate_data)

__all__ = ["AtomicFitMixin", "atomic_fit", "canonical_csr", "check_allocation",
           "check_sample_weight", "check_sparse_integrity", "make_dataset",
           "reject_string_input", "seed_from_random_state", "single_thread_blas",
           "validate_data"]
