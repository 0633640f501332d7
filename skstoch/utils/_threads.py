"""One-thread BLAS during a fit."""
from threadpoolctl import ThreadpoolController

_CONTROLLER = None


def single_thread_blas():
    """Context manager limiting BLAS to one thread; the previous limits come back on exit.

    The solvers' BLAS calls are vector or small-matrix operations inside a sequential loop:
    OpenBLAS threads gain nothing there, and their wake-ups and spinning cost CPU time (and
    wall time on a busy machine). The threadpoolctl controller (a scan of the loaded
    libraries, 5-20 ms) is built once per process; entering the limit then costs ~0.1 ms,
    against 4-18 ms for a plain ``threadpool_limits`` call.
    """
    global _CONTROLLER
    if _CONTROLLER is None:
        _CONTROLLER = ThreadpoolController()
    return _CONTROLLER.limit(limits=1, user_api="blas")
