import numpy as np
import pytest


@pytest.fixture
def rng():
    """A seeded generator: tests are deterministic."""
    return np.random.RandomState(0)


def pytest_report_header(config):
    """The combination under test (.ci/run runs several: README.md, "Supported versions")."""
    import platform

    import joblib
    import scipy
    import sklearn
    import threadpoolctl

    return (f"Python {platform.python_version()}, numpy {np.__version__}, scipy "
            f"{scipy.__version__}, scikit-learn {sklearn.__version__}, joblib "
            f"{joblib.__version__}, threadpoolctl {threadpoolctl.__version__}")
