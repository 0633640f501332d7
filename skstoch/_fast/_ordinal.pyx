"""Kernels of OrdinalEmbedding (paper 000): full gradient, SVRG / SGD inner loop with a lazy
(or, to reproduce the paper's cost model, literal dense) update, comparison checks and a
reproducible normal initialisation.  The per-fit tables of the inner loop (loss, comparisons,
batch geometry, seed, workspaces) are bundled in one :class:`InnerLoop` built once per fit.

Comparisons arrive as validated int32 quadruplets ``Q[q] = (i, j, l, k)`` meaning
``d(i, j) < d(l, k)`` (a triplet (i, j, k) is stored as (i, j, i, k)); Python has checked
every index (these kernels run without bounds checks).  The embedding ``X`` is a C-contiguous
(n_objects, n_components) float64 array.
"""
from libc.stdint cimport int32_t, int64_t, uint64_t
from libc.stdlib cimport malloc, free
from libc.string cimport memset

from ._comparison_loss cimport ComparisonLoss
from ._random cimport rng_state, rng_init, rng_u64, rng_normal


cdef extern from *:
    """
    #if defined(__GNUC__) || defined(__clang__)
    #define SKSTOCH_PREFETCH(p) __builtin_prefetch((const void*)(p))
    #else
    #define SKSTOCH_PREFETCH(p) ((void)0)
    #endif
    """
    void prefetch "SKSTOCH_PREFETCH"(const void* p) noexcept nogil


cdef Py_ssize_t _AHEAD = 8   # comparisons prefetched ahead in the full-gradient pass


cdef inline double _sqdist(const double* u, const double* v, Py_ssize_t p) noexcept nogil:
    cdef double s = 0.0, d
    cdef Py_ssize_t f
    for f in range(p):
        d = u[f] - v[f]
        s += d * d
    return s


cdef inline double _diff_sqnorm(const double* u, const double* v, double* out,
                                Py_ssize_t p) noexcept nogil:
    """``out = u - v``; return ``|u - v|^2`` (the same operations, in the same order, as
    :func:`_sqdist`, so both give the same bits)."""
    cdef double s = 0.0, d
    cdef Py_ssize_t f
    for f in range(p):
        d = u[f] - v[f]
        out[f] = d
        s += d * d
    return s


cdef inline Py_ssize_t _randint(rng_state* s, uint64_t un, uint64_t threshold) noexcept nogil:
    """``rng_randint(s, un)`` with its rejection threshold ``2**64 mod un`` computed once by
    the caller (one 64-bit division per draw instead of two); the same draws."""
    cdef uint64_t x = rng_u64(s)
    while x < threshold:
        x = rng_u64(s)
    return <Py_ssize_t>(x % un)


cdef inline void _add_pair(double* gi, double* gj, double coef, const double* diff,
                           Py_ssize_t p) noexcept nogil:
    """``gi += coef diff`` and ``gj -= coef diff`` (the gradient of one distance's term)."""
    cdef Py_ssize_t f
    cdef double v
    for f in range(p):
        v = coef * diff[f]
        gi[f] += v
        gj[f] -= v


def full_gradient(ComparisonLoss loss, const int32_t[:, ::1] Q, const double[:, ::1] X,
                  double[:, ::1] G, double scale):
    """Write ``scale * sum_q grad f_q(X)`` into ``G`` (zeroed first); return ``sum_q f_q(X)``.

    One pass over the comparisons, O(m p) time, no memory beyond ``G`` and 2p doubles.  Each
    difference ``x_i - x_j`` is computed once and reused for the distance and the gradient.
    """
    cdef Py_ssize_t m = Q.shape[0], p = X.shape[1], n = X.shape[0]
    cdef Py_ssize_t q
    cdef double a, c, ga, gc, total = 0.0
    if G.shape[0] != n or G.shape[1] != p:
        raise ValueError("G must have the shape of X")
    cdef const double* Xp = &X[0, 0]
    cdef double* Gp = &G[0, 0]
    cdef const int32_t* row = &Q[0, 0]
    cdef const int32_t* ahead
    cdef const double* xi
    cdef const double* xj
    cdef const double* xl
    cdef const double* xk
    cdef double* d1 = <double*>malloc(2 * p * sizeof(double))
    cdef double* d2 = d1 + p
    if d1 == NULL:
        raise MemoryError()
    with nogil:
        memset(Gp, 0, n * p * sizeof(double))
        for q in range(m):
            if q + _AHEAD < m:
                # the rows of a later comparison: random reads that miss the cache once the
                # embedding outgrows it (thousands of objects)
                ahead = row + 4 * _AHEAD
                prefetch(Xp + ahead[0] * p)
                prefetch(Xp + ahead[1] * p)
                prefetch(Xp + ahead[3] * p)
                prefetch(Gp + ahead[0] * p)
                prefetch(Gp + ahead[1] * p)
                prefetch(Gp + ahead[3] * p)
            xi = Xp + row[0] * p
            xj = Xp + row[1] * p
            xl = Xp + row[2] * p
            xk = Xp + row[3] * p
            a = _diff_sqnorm(xi, xj, d1, p)
            c = _diff_sqnorm(xl, xk, d2, p)
            total += loss.loss_grad(a, c, &ga, &gc)
            if ga != 0.0:
                _add_pair(Gp + row[0] * p, Gp + row[1] * p, 2.0 * scale * ga, d1, p)
            if gc != 0.0:
                _add_pair(Gp + row[2] * p, Gp + row[3] * p, 2.0 * scale * gc, d2, p)
            row += 4
    free(d1)
    return total


def loss_sum(ComparisonLoss loss, const int32_t[:, ::1] Q, const double[:, ::1] X):
    """``sum_q f_q(X)`` (no gradient)."""
    cdef Py_ssize_t m = Q.shape[0], p = X.shape[1]
    cdef Py_ssize_t q
    cdef double ga, gc, total = 0.0
    cdef const double* Xp = &X[0, 0]
    cdef const int32_t* row = &Q[0, 0]
    with nogil:
        for q in range(m):
            total += loss.loss_grad(_sqdist(Xp + row[0] * p, Xp + row[1] * p, p),
                                    _sqdist(Xp + row[2] * p, Xp + row[3] * p, p), &ga, &gc)
            row += 4
    return total


cdef inline void _catch_up(double* X, const double* G, int64_t* last, Py_ssize_t r,
                           int64_t t, double dense_step, Py_ssize_t p) noexcept nogil:
    """Apply the dense steps t' in [last[r], t) of row r at once: x_r -= (t - last) b eta g_r."""
    cdef double coef
    cdef Py_ssize_t f
    cdef double* x
    cdef const double* g
    if last[r] < t:
        coef = (t - last[r]) * dense_step
        x = X + r * p
        g = G + r * p
        for f in range(p):
            x[f] -= coef * g[f]
        last[r] = t


cdef class InnerLoop:
    """Per-fit tables of the stochastic inner loop, built once per fit.

    Holds the loss, the comparisons ``Q`` (validated by Python: every index below
    ``n_objects``), the batch geometry (``n_steps`` steps of ``batch_size`` comparisons), the
    seed of the counter-based generator, the update mode and the workspaces: ``last``
    (n_objects,), ``buf`` (2 * batch_size, n_components) and ``idx`` (2 * batch_size,).
    :func:`svrg_inner` and :func:`sgd_inner` read it; it is never stored on an estimator.

    Parameters
    ----------
    loss : ComparisonLoss
    Q : int32 array of shape (n_comparisons, 4), C-contiguous
    n_objects, n_components : int
        Shape of the embeddings the loop will update.
    n_steps : int
        Inner steps per call.
    batch_size : int
        Comparisons drawn (uniformly, with replacement) per step.
    seed : int
        Seed of the counter-based generator; each call names its stream.
    dense_update : bool, default=False
        SVRG only: subtract the full-gradient term from every row at every step, as the
        paper's code does, instead of lazily per row.
    """
    cdef ComparisonLoss loss
    cdef const int32_t[:, ::1] Q
    cdef Py_ssize_t n_objects, n_components, n_steps, batch_size
    cdef uint64_t seed
    cdef bint dense_update
    cdef int64_t* last
    cdef double* buf
    cdef int32_t* idx

    def __cinit__(self, ComparisonLoss loss not None, const int32_t[:, ::1] Q,
                  Py_ssize_t n_objects, Py_ssize_t n_components, Py_ssize_t n_steps,
                  Py_ssize_t batch_size, uint64_t seed, bint dense_update=False):
        if Q.shape[0] < 1 or Q.shape[1] != 4:
            raise ValueError(f"Q must have shape (n_comparisons >= 1, 4), got "
                             f"({Q.shape[0]}, {Q.shape[1]})")
        if n_objects < 1 or n_components < 1 or batch_size < 1 or n_steps < 0:
            raise ValueError("n_objects, n_components and batch_size must be positive and "
                             "n_steps non-negative")
        self.loss = loss
        self.Q = Q
        self.n_objects = n_objects
        self.n_components = n_components
        self.n_steps = n_steps
        self.batch_size = batch_size
        self.seed = seed
        self.dense_update = dense_update
        self.last = <int64_t*>malloc(n_objects * sizeof(int64_t))
        self.buf = <double*>malloc(2 * batch_size * n_components * sizeof(double))
        self.idx = <int32_t*>malloc(2 * batch_size * sizeof(int32_t))
        if self.last == NULL or self.buf == NULL or self.idx == NULL:
            raise MemoryError()

    def __dealloc__(self):
        free(self.last)
        free(self.buf)
        free(self.idx)

    cdef _check(self, const double[:, ::1] A, str name):
        if A.shape[0] != self.n_objects or A.shape[1] != self.n_components:
            raise ValueError(f"{name} must have shape (n_objects, n_components) = "
                             f"({self.n_objects}, {self.n_components}), got "
                             f"({A.shape[0]}, {A.shape[1]})")


def svrg_inner(InnerLoop loop not None, double[:, ::1] X, const double[:, ::1] X_snap,
               const double[:, ::1] G, double step, uint64_t stream):
    """Run ``loop.n_steps`` SVRG mini-batch steps in place on ``X``; return the RNG counter.

    Paper 000 Alg. 1 with the errata fixed: step t draws ``b = batch_size`` comparisons
    ``I_t`` uniformly with replacement and does

        x <- x - b*step * ( (1/b) sum_{q in I_t} (grad f_q(x) - grad f_q(x_snap)) + g )

    where ``g = G`` is the full gradient at the snapshot ``X_snap``.  The dense term
    ``b*step*g`` is applied lazily: row r carries ``last[r]``, the number of dense steps already
    applied, and is brought up to date just before it is read and once more at the end (exact,
    O(b p) per step instead of O(n p)).  With ``loop.dense_update`` the dense term is instead
    subtracted from every row at the end of every step, O(n p) per step, as the paper's code
    does; the iterates are the same up to rounding.

    Draws come from the counter-based stream (loop.seed, stream) from counter 0.
    """
    loop._check(X, "X")
    loop._check(X_snap, "X_snap")
    loop._check(G, "G")
    return _inner(loop, &X[0, 0], &X_snap[0, 0], &G[0, 0], step, stream, True)


def sgd_inner(InnerLoop loop not None, double[:, ::1] X, double step, uint64_t stream):
    """Run ``loop.n_steps`` plain mini-batch SGD steps in place on ``X``; return the RNG
    counter.

    Step t draws ``b = batch_size`` comparisons ``I_t`` uniformly with replacement and does
    ``x <- x - step * sum_{q in I_t} grad f_q(x)``.  Draws as in :func:`svrg_inner`.
    """
    loop._check(X, "X")
    return _inner(loop, &X[0, 0], NULL, NULL, step, stream, False)


cdef uint64_t _inner(InnerLoop loop, double* Xp, const double* Sp, const double* Gp,
                     double step, uint64_t stream, bint variance_reduced):
    """The inner loop of :func:`svrg_inner` (``variance_reduced``) and :func:`sgd_inner`
    (``Sp`` and ``Gp`` are then not read).

    The batch of step t + 1 is drawn during step t (the same draws in the same order) so that
    its comparison rows can be prefetched while step t computes.
    """
    cdef ComparisonLoss loss = loop.loss
    cdef Py_ssize_t m = loop.Q.shape[0], p = loop.n_components, n = loop.n_objects
    cdef Py_ssize_t n_steps = loop.n_steps, batch_size = loop.batch_size
    cdef Py_ssize_t t, s, f, r, q
    cdef double dense_step = batch_size * step
    cdef Py_ssize_t np_ = n * p
    cdef bint lazy = variance_reduced and not loop.dense_update
    cdef bint dense_update = variance_reduced and loop.dense_update
    cdef double a, c, ga, gc, ga_s, gc_s, v
    cdef const int32_t* Qp = &loop.Q[0, 0]
    cdef int64_t* lastp = loop.last
    cdef double* bufp = loop.buf
    cdef int32_t* idxp = loop.idx
    cdef int32_t* nextp = idxp + batch_size
    cdef int32_t* swap
    cdef double* xi
    cdef double* xj
    cdef double* xl
    cdef double* xk
    cdef double* b1
    cdef double* b2
    cdef const double* si
    cdef const double* sj
    cdef const double* sl
    cdef const double* sk
    cdef const int32_t* row
    cdef uint64_t um = <uint64_t>m
    cdef uint64_t threshold = (<uint64_t>0 - um) % um
    cdef rng_state rng
    rng_init(&rng, loop.seed, stream, 0)
    with nogil:
        if lazy:
            for r in range(n):
                lastp[r] = 0
        for s in range(batch_size):
            nextp[s] = <int32_t>_randint(&rng, um, threshold)
        for t in range(n_steps):
            swap = idxp
            idxp = nextp
            nextp = swap
            if t + 1 < n_steps:
                for s in range(batch_size):
                    nextp[s] = <int32_t>_randint(&rng, um, threshold)
                    prefetch(Qp + 4 * nextp[s])
            if lazy:
                for s in range(batch_size):
                    row = Qp + 4 * idxp[s]
                    _catch_up(Xp, Gp, lastp, row[0], t, dense_step, p)
                    _catch_up(Xp, Gp, lastp, row[1], t, dense_step, p)
                    _catch_up(Xp, Gp, lastp, row[2], t, dense_step, p)
                    _catch_up(Xp, Gp, lastp, row[3], t, dense_step, p)
            # gradients of the whole batch at the same point x_t; b1 / b2 first hold the
            # differences x_i - x_j and x_l - x_k
            for s in range(batch_size):
                q = idxp[s]
                row = Qp + 4 * q
                b1 = bufp + 2 * s * p
                b2 = b1 + p
                a = _diff_sqnorm(Xp + row[0] * p, Xp + row[1] * p, b1, p)
                c = _diff_sqnorm(Xp + row[2] * p, Xp + row[3] * p, b2, p)
                loss.grad(a, c, &ga, &gc)
                if variance_reduced:
                    si = Sp + row[0] * p
                    sj = Sp + row[1] * p
                    sl = Sp + row[2] * p
                    sk = Sp + row[3] * p
                    loss.grad(_sqdist(si, sj, p), _sqdist(sl, sk, p), &ga_s, &gc_s)
                    for f in range(p):
                        b1[f] = 2.0 * (ga * b1[f] - ga_s * (si[f] - sj[f]))
                        b2[f] = 2.0 * (gc * b2[f] - gc_s * (sl[f] - sk[f]))
                else:
                    for f in range(p):
                        b1[f] = 2.0 * ga * b1[f]
                        b2[f] = 2.0 * gc * b2[f]
            for s in range(batch_size):
                row = Qp + 4 * idxp[s]
                xi = Xp + row[0] * p
                xj = Xp + row[1] * p
                xl = Xp + row[2] * p
                xk = Xp + row[3] * p
                b1 = bufp + 2 * s * p
                b2 = b1 + p
                for f in range(p):
                    v = step * b1[f]
                    xi[f] -= v
                    xj[f] += v
                    v = step * b2[f]
                    xl[f] -= v
                    xk[f] += v
            if dense_update:
                # the paper's literal update: the full-gradient term on all n rows, O(n p)
                for r in range(np_):
                    Xp[r] -= dense_step * Gp[r]
        if lazy:
            for r in range(n):
                _catch_up(Xp, Gp, lastp, r, n_steps, dense_step, p)
    return rng.counter


def satisfied(const int32_t[:, ::1] Q, const double[:, ::1] X, signed char[::1] out):
    """``out[q] = 1`` if d^2(i, j) < d^2(l, k) strictly, else 0; return the count of ones."""
    cdef Py_ssize_t m = Q.shape[0], p = X.shape[1]
    cdef Py_ssize_t q, count = 0
    cdef const double* Xp = &X[0, 0]
    cdef const int32_t* row = &Q[0, 0]
    if out.shape[0] != m:
        raise ValueError(f"out must have length {m}")
    with nogil:
        for q in range(m):
            if (_sqdist(Xp + row[0] * p, Xp + row[1] * p, p)
                    < _sqdist(Xp + row[2] * p, Xp + row[3] * p, p)):
                out[q] = 1
                count += 1
            else:
                out[q] = 0
            row += 4
    return count


def normal_fill(double[:, ::1] X, double scale, uint64_t seed, uint64_t stream):
    """Fill ``X`` with ``scale`` times standard normals from the stream (seed, stream)."""
    cdef rng_state rng
    cdef Py_ssize_t r, f
    rng_init(&rng, seed, stream, 0)
    with nogil:
        for r in range(X.shape[0]):
            for f in range(X.shape[1]):
                X[r, f] = scale * rng_normal(&rng)
