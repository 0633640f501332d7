"""Seeds for the counter-based generator of the kernels."""
import numpy as np
from sklearn.utils import check_random_state

SEED_BOUND = 2**63 - 1


def seed_from_random_state(random_state):
    """A 63-bit integer seed drawn from ``random_state`` (None, int or RandomState).

    The same ``random_state`` always gives the same seed, so kernels keyed by
    (seed, stream, counter) are bitwise reproducible.
    """
    return int(check_random_state(random_state).randint(0, SEED_BOUND, dtype=np.int64))
