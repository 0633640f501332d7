"""All-or-nothing ``fit``: an estimator whose fit raises keeps its previous state.

A fit can end early in many ways: invalid input found late (after some attributes were set),
a diverging solver (:class:`~skstoch._solvers.DivergenceError`), an exception or
``KeyboardInterrupt`` raised from the user's callback, Ctrl-C in a long kernel loop.  Without
care the estimator is then half-written: ``n_features_in_`` of the new data next to the
``coef_`` of the previous fit, or ``classes_`` without ``coef_``.  :func:`atomic_fit` snapshots
the instance ``__dict__`` when ``fit`` starts and restores it when ``fit`` raises (any
``BaseException``), so the estimator is exactly as before the call: unfitted, or the previous
fit, never a mix.

The snapshot is shallow (the dict, not the arrays it holds): it costs O(number of attributes),
and it is exact because fits replace their fitted arrays instead of writing into them (the
reliability tests check this for every estimator).
"""
import functools

__all__ = ["atomic_fit", "AtomicFitMixin"]


def atomic_fit(method):
    """Decorate a ``fit``-like method so that the instance is restored when it raises.

    Nested decorated calls (a subclass ``fit`` calling ``super().fit``) each take their own
    snapshot; the outermost one decides the final state.
    """
    if getattr(method, "__skstoch_atomic__", False):
        return method

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        saved = dict(self.__dict__)
        try:
            return method(self, *args, **kwargs)
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(saved)
            raise

    wrapper.__skstoch_atomic__ = True
    return wrapper


class AtomicFitMixin:
    """Make ``fit`` and ``partial_fit`` of every subclass atomic (see :func:`atomic_fit`).

    The methods are wrapped when the subclass is created, so an estimator module needs no
    decorator: inheriting (directly or through :class:`skstoch.base.StochasticSolverMixin`)
    is enough.
    """

    _atomic_methods = ("fit", "partial_fit")

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name in cls._atomic_methods:
            method = cls.__dict__.get(name)
            if callable(method):
                setattr(cls, name, atomic_fit(method))
