import numpy as np
import pytest


@pytest.fixture
def rng():
    """A seeded generator: tests are deterministic."""
    return np.random.RandomState(0)


def pytest_report_header(config):
    import sklearn
    import scipy

    return f"numpy {np.__version__}, scipy {scipy.__version__}, scikit-learn {sklearn.__version__}"
