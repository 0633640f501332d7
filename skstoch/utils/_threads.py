"""One-thread BLAS during a fit."""
import threading
from contextlib import contextmanager

from threadpoolctl import ThreadpoolController

_CONTROLLER = None
_LOCK = threading.Lock()
_USERS = 0          # fits (or one-vs-rest threads) currently inside the limit
_OUTER_LIMIT = None  # the limiter of the first one in; it restores the caller's limits


@contextmanager
def single_thread_blas():
    """Context manager limiting BLAS to one thread; the previous limits come back on exit.

    The solvers' BLAS calls are vector or small-matrix operations inside a sequential loop:
    OpenBLAS threads gain nothing there, and their wake-ups and spinning cost CPU time (and
    wall time on a busy machine). The threadpoolctl controller (a scan of the loaded
    libraries, 5-20 ms) is built once per process; entering the limit then costs ~0.1 ms,
    against 4-18 ms for a plain ``threadpool_limits`` call.

    The limit is process-wide, so overlapping uses from several threads (two fits at once,
    one-vs-rest heads in threads) are counted: the first one in sets the limit and the last
    one out restores the limits found by the first (a plain nested limit would restore them
    while another thread still runs, or leave the process at one thread).
    """
    global _CONTROLLER, _USERS, _OUTER_LIMIT
    with _LOCK:
        if _CONTROLLER is None:
            _CONTROLLER = ThreadpoolController()
        if _USERS == 0:
            _OUTER_LIMIT = _CONTROLLER.limit(limits=1, user_api="blas")
        _USERS += 1
    try:
        yield
    finally:
        with _LOCK:
            _USERS -= 1
            if _USERS == 0:
                _OUTER_LIMIT.restore_original_limits()
                _OUTER_LIMIT = None
