"""Warnings attributed to the user's call."""
import os
import sys
import warnings

import joblib
import sklearn

# frames in these packages are the fit's machinery, not the caller: skstoch itself,
# scikit-learn (fit-context wrappers, Pipeline, searches) and joblib (parallel fits)
_INTERNAL = tuple(os.path.dirname(os.path.abspath(init)) + os.sep
                  for init in (os.path.join(os.path.dirname(__file__), os.pardir, "__init__.py"),
                               sklearn.__file__, joblib.__file__))


def warn(message, category):
    """``warnings.warn`` attributed to the first frame outside skstoch, scikit-learn and
    joblib: the user's line that called ``fit`` (or ``fit_transform``, a ``Pipeline``, a
    search), whatever the depth of the call inside the package."""
    frame, level = sys._getframe(1), 2
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_INTERNAL):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)
