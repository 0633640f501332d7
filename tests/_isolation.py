"""Run a callable in a forked child under an address-space cap and a wall-clock limit.

A segfault, an abort, a hang or a ``MemoryError`` of the code under test then becomes a result
the test reports with its case name, instead of killing (or stalling) the test process.
POSIX only (``os.fork``, ``resource``).
"""
import faulthandler
import os
import pickle
import resource
import select
import signal
import tempfile
import time
import traceback
import warnings

from threadpoolctl import threadpool_limits

# headroom over the parent's current address space (mapped libraries, BLAS buffers)
MEMORY_HEADROOM = 1 << 30


def _current_address_space():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * resource.getpagesize()


def run_isolated(fn, timeout=30.0, headroom=MEMORY_HEADROOM):
    """``fn()`` in a forked child; return a dict with ``status`` and details.

    ``status`` is ``"ok"`` (``value`` holds the result, which must pickle), ``"raised"``
    (``exc_type``, ``message``, ``traceback``), ``"signal"`` (``signal``: a crash),
    ``"hang"`` (still running after ``timeout`` seconds; the child is killed) or ``"exit"``.
    ``runtime_warnings`` counts the RuntimeWarnings ``fn`` emitted.
    """
    limit = _current_address_space() + headroom
    read_fd, write_fd = os.pipe()
    stacks = tempfile.TemporaryFile()   # where a hung child says where it hangs
    pid = os.fork()
    if pid == 0:  # child
        os.close(read_fd)
        try:
            faulthandler.dump_traceback_later(max(timeout - 1.0, 0.5), file=stacks)
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
            with warnings.catch_warnings(record=True) as caught, threadpool_limits(1):
                # one OpenMP/BLAS thread: the parent's OpenMP pool (scikit-learn's neighbour
                # searches start one) does not survive fork, and libgomp then waits forever
                warnings.simplefilter("always")
                try:
                    out = {"status": "ok", "value": fn()}
                except BaseException as exc:  # noqa: BLE001 - reported to the parent
                    out = {"status": "raised", "exc_type": type(exc).__name__,
                           "exc": exc if isinstance(exc, (ValueError, TypeError)) else None,
                           "message": str(exc)[:500],
                           "traceback": traceback.format_exc(limit=-4)}
            out["runtime_warnings"] = sum(issubclass(w.category, RuntimeWarning)
                                          for w in caught)
            try:
                payload = pickle.dumps(out)
            except Exception:  # noqa: BLE001 - an unpicklable value or exception
                out.pop("value", None)
                out["exc"] = None
                payload = pickle.dumps(out)
            view = memoryview(payload)
            while view:
                view = view[os.write(write_fd, view):]
        finally:
            os._exit(0)
    os.close(write_fd)
    chunks = []
    deadline = time.monotonic() + timeout
    hung = False
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            hung = True
            break
        ready, _, _ = select.select([read_fd], [], [], left)
        if not ready:
            continue
        chunk = os.read(read_fd, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(read_fd)
    if hung:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        stacks.seek(0)
        where = stacks.read().decode(errors="replace")[:3000]   # innermost frames first
        stacks.close()
        return {"status": "hang", "timeout": timeout, "stacks": where}
    stacks.close()
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        return {"status": "signal", "signal": signal.Signals(os.WTERMSIG(status)).name}
    if not chunks:
        return {"status": "exit", "code": os.WEXITSTATUS(status)}
    return pickle.loads(b"".join(chunks))


def describe(result):
    """One line for a failure message."""
    status = result["status"]
    if status == "raised":
        return f"raised {result['exc_type']}: {result['message']}\n{result['traceback']}"
    if status == "signal":
        return f"crashed with {result['signal']}"
    if status == "hang":
        where = result.get("stacks", "").strip()
        return (f"still running after {result['timeout']} s (a hang)"
                + (f"; where it was:\n{where}" if where else ""))
    if status == "exit":
        return f"child exited with code {result['code']} without a result"
    return status
