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


def load_module(path):
    """The Python file ``path`` (a helper outside the package: ``examples/_*.py``,
    ``doc/_ext/*.py``) imported as a module named after its stem, once: it is registered in
    ``sys.modules`` (dataclasses look their module up there) and later calls return it."""
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(path).resolve()
    module = sys.modules.get(path.stem)
    if module is not None and Path(getattr(module, "__file__", "") or "").resolve() == path:
        return module
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[path.stem]
        raise
    return module
