"""Kernels of LMNNMetric (paper 001, section 4): unprojected epochs of stochastic
(proximal) subgradient steps on the Mahalanobis matrix A, the ORDA inner loop, the
per-iteration-projection and one-projection baselines, and the triplet hinge sum.

All matrices are dense, C-contiguous and exactly symmetric: every update writes the upper
triangle and mirrors it, so A never drifts away from symmetry by round-off.

The constraint check ``lambda_min(A) >= eps`` runs every iteration with a few Lanczos steps
warm-started from the previous eigenvector estimate (O(m d^2), m = ``lanczos_steps``), never a
full eigendecomposition; the per-iteration projection of the 'sgd' baseline calls LAPACK
``dsyevr`` (eigenpairs below eps only) and corrects A by a rank-r update.

The per-fit tables (data, triplet table, prior, hyper-parameters, generator key, workspaces)
are one :class:`Tables` object built once per fit; ``run_sgd`` / ``run_orda`` take it with the
iterate and the solver state (eigenvector estimate, RNG counters), which they update.

LAPACK is reached through scipy's ``cython_lapack`` capsules at import time (no compile-time
dependency on scipy's .pxd files).  Python validates every triplet index before a kernel sees it.
"""
from cpython.pycapsule cimport PyCapsule_GetName, PyCapsule_GetPointer
from libc.math cimport exp, fabs, sqrt, INFINITY
from libc.stdint cimport int32_t, int64_t, uint64_t
from libc.stdlib cimport free, malloc

from ._prox cimport soft_threshold
from ._random cimport rng_init, rng_normal, rng_randint, rng_state

import numpy as np

ctypedef void (*dstev_t)(char*, int*, double*, double*, double*, int*, double*,
                         int*) noexcept nogil
ctypedef void (*dsyevr_t)(char*, char*, char*, int*, double*, int*, double*, double*, int*,
                          int*, double*, int*, double*, double*, int*, int*, double*, int*,
                          int*, int*, int*) noexcept nogil

ctypedef void (*dgemv_t)(char*, int*, int*, double*, double*, int*, double*, int*, double*,
                         double*, int*) noexcept nogil
ctypedef void (*dgemm_t)(char*, char*, int*, int*, int*, double*, double*, int*, double*,
                         int*, double*, double*, int*) noexcept nogil
ctypedef void (*dsyrk_t)(char*, char*, int*, int*, double*, double*, int*, double*, double*,
                         int*) noexcept nogil

cdef dstev_t _dstev = NULL
cdef dsyevr_t _dsyevr = NULL
cdef dgemv_t _dgemv = NULL
cdef dgemm_t _dgemm = NULL
cdef dsyrk_t _dsyrk = NULL


cdef void* _capsule_pointer(str module, str name) except NULL:
    if module == "lapack":
        import scipy.linalg.cython_lapack as lib
    else:
        import scipy.linalg.cython_blas as lib
    capsule = lib.__pyx_capi__[name]
    return PyCapsule_GetPointer(capsule, PyCapsule_GetName(capsule))


_dstev = <dstev_t>_capsule_pointer("lapack", "dstev")
_dsyevr = <dsyevr_t>_capsule_pointer("lapack", "dsyevr")
_dgemv = <dgemv_t>_capsule_pointer("blas", "dgemv")
_dgemm = <dgemm_t>_capsule_pointer("blas", "dgemm")
_dsyrk = <dsyrk_t>_capsule_pointer("blas", "dsyrk")

# modes of run_sgd
cdef enum:
    MODE_EPRO = 0      # augmented subgradient + prox, no projection (Algorithm 1, Eq. 18)
    MODE_SGD = 1       # prox step then projection every iteration (baseline)
    MODE_ONEPROJ = 2   # smoothed penalty gamma log(1 + exp(lam c / gamma)), no projection


# ---------------------------------------------------------------------------------------
# dense helpers (d x d symmetric, C-contiguous)

cdef inline double _dot(const double* a, const double* b, Py_ssize_t d) noexcept nogil:
    cdef Py_ssize_t i
    cdef double s = 0.0
    for i in range(d):
        s += a[i] * b[i]
    return s


cdef inline void _matvec(const double* A, const double* v, double* out,
                         Py_ssize_t d) noexcept nogil:
    """out = A v for symmetric A (BLAS dgemv; A is stored in full)."""
    cdef char trans = b'N'
    cdef int n = <int>d, one = 1
    cdef double alpha = 1.0, beta = 0.0
    _dgemv(&trans, &n, &n, &alpha, <double*>A, &n, <double*>v, &one, &beta, out, &one)


cdef inline void _diff(const double* X, const float* X32, Py_ssize_t d, Py_ssize_t i,
                       Py_ssize_t j, double* out) noexcept nogil:
    """out = x_i - x_j in double; rows of a float32 X (``X32`` not NULL) are widened to
    double first, so the result is the float64 fit's on the same values."""
    cdef Py_ssize_t k
    cdef const double* xi
    cdef const double* xj
    cdef const float* fi
    cdef const float* fj
    if X32 != NULL:
        fi = X32 + i * d
        fj = X32 + j * d
        for k in range(d):
            out[k] = <double>fi[k] - <double>fj[k]
        return
    xi = X + i * d
    xj = X + j * d
    for k in range(d):
        out[k] = xi[k] - xj[k]


cdef inline void _mirror(double* A, Py_ssize_t d) noexcept nogil:
    """Copy the upper triangle into the lower one."""
    cdef Py_ssize_t i, j
    for i in range(d):
        for j in range(i + 1, d):
            A[j * d + i] = A[i * d + j]


cdef void _prox(double* A, Py_ssize_t d, double step_mu1, double step_mu2) noexcept nogil:
    """In place prox of s((mu1/2)||A||_F^2 + mu2 ||A||_1,offdiag) (upper triangle, mirrored):
    off-diagonal soft-threshold by s mu2, then every entry divided by 1 + s mu1."""
    cdef Py_ssize_t i, j
    cdef double scale = 1.0 / (1.0 + step_mu1)
    cdef double* row
    for i in range(d):
        row = A + i * d
        row[i] = row[i] * scale
        for j in range(i + 1, d):
            row[j] = soft_threshold(row[j], step_mu2) * scale
    _mirror(A, d)


# ---------------------------------------------------------------------------------------
# smallest eigenpair by warm-started Lanczos

cdef struct Lanczos:
    Py_ssize_t d
    Py_ssize_t m
    double* Q       # m x d basis
    double* w       # d
    double* alpha   # m
    double* beta    # m
    double* z       # m x m
    double* work    # 2 m


cdef void _lanczos_null(Lanczos* lz) noexcept nogil:
    lz.Q = NULL
    lz.w = NULL
    lz.alpha = NULL
    lz.beta = NULL
    lz.z = NULL
    lz.work = NULL


cdef int _lanczos_alloc(Lanczos* lz, Py_ssize_t d, Py_ssize_t m) noexcept nogil:
    lz.d = d
    lz.m = m
    lz.Q = <double*>malloc(m * d * sizeof(double))
    lz.w = <double*>malloc(d * sizeof(double))
    lz.alpha = <double*>malloc(m * sizeof(double))
    lz.beta = <double*>malloc(m * sizeof(double))
    lz.z = <double*>malloc(m * m * sizeof(double))
    lz.work = <double*>malloc(2 * m * sizeof(double) + 8)
    if (lz.Q == NULL or lz.w == NULL or lz.alpha == NULL or lz.beta == NULL or lz.z == NULL
            or lz.work == NULL):
        return -1
    return 0


cdef void _lanczos_free(Lanczos* lz) noexcept nogil:
    free(lz.Q)
    free(lz.w)
    free(lz.alpha)
    free(lz.beta)
    free(lz.z)
    free(lz.work)


cdef void _random_unit(double* v, Py_ssize_t d, rng_state* rng) noexcept nogil:
    cdef Py_ssize_t i
    cdef double nrm
    while True:
        for i in range(d):
            v[i] = rng_normal(rng)
        nrm = sqrt(_dot(v, v, d))
        if nrm > 0.0:
            break
    for i in range(d):
        v[i] /= nrm


cdef inline void _orthogonalize(double* w, const double* Q, Py_ssize_t n_basis,
                                Py_ssize_t d) noexcept nogil:
    """w minus its projections on the first ``n_basis`` rows of Q (orthonormal), the
    Gram-Schmidt pass done twice (full reorthogonalization)."""
    cdef Py_ssize_t p, k, i
    cdef double h
    for p in range(2):
        for k in range(n_basis):
            h = _dot(Q + k * d, w, d)
            for i in range(d):
                w[i] -= h * Q[k * d + i]


cdef double _lanczos_min(const double* A, double* u, Lanczos* lz,
                         rng_state* rng) noexcept nogil:
    """Smallest Ritz value of A on the m-step Krylov space started at u (full
    reorthogonalization).  u (unit on exit) becomes the Ritz vector.  The Ritz value is an
    upper bound of lambda_min(A); started from the previous iteration's vector it tracks
    lambda_min as A changes by small steps."""
    cdef Py_ssize_t d = lz.d, m = lz.m
    cdef Py_ssize_t i, j, k, steps = 0
    cdef double nrm, h, theta
    cdef double* q
    cdef int n_int, ldz, info = 0
    cdef char jobz = b'V'
    nrm = sqrt(_dot(u, u, d))
    if not (nrm > 0.0):
        _random_unit(lz.Q, d, rng)
    else:
        for i in range(d):
            lz.Q[i] = u[i] / nrm
    for j in range(m):
        q = lz.Q + j * d
        _matvec(A, q, lz.w, d)
        lz.alpha[j] = _dot(q, lz.w, d)
        steps = j + 1
        if j == m - 1:
            break
        _orthogonalize(lz.w, lz.Q, j + 1, d)
        nrm = sqrt(_dot(lz.w, lz.w, d))
        if nrm <= 1e-10 * (fabs(lz.alpha[j]) + 1e-300) or j + 1 >= d:
            if j + 1 >= d:
                break
            # invariant subspace: continue from a random direction orthogonal to the basis
            lz.beta[j] = 0.0
            _random_unit(lz.w, d, rng)
            _orthogonalize(lz.w, lz.Q, j + 1, d)
            nrm = sqrt(_dot(lz.w, lz.w, d))
            if not (nrm > 0.0):
                break
        else:
            lz.beta[j] = nrm
        for i in range(d):
            lz.Q[(j + 1) * d + i] = lz.w[i] / nrm
    if steps == 1:
        for i in range(d):
            u[i] = lz.Q[i]
        return lz.alpha[0]
    n_int = <int>steps
    ldz = n_int
    _dstev(&jobz, &n_int, lz.alpha, lz.beta, lz.z, &ldz, lz.work, &info)
    theta = lz.alpha[0]   # eigenvalues in ascending order
    for i in range(d):
        u[i] = 0.0
    for k in range(steps):
        h = lz.z[k]       # first eigenvector, column-major
        for i in range(d):
            u[i] += h * lz.Q[k * d + i]
    nrm = sqrt(_dot(u, u, d))
    for i in range(d):
        u[i] /= nrm
    return theta


# ---------------------------------------------------------------------------------------
# stochastic gradient pieces

cdef struct Problem:
    const double* X         # float64 rows, or NULL when X32 is set
    const float* X32        # float32 rows (read without a float64 copy), or NULL
    Py_ssize_t n
    Py_ssize_t d
    const int32_t* trip     # n_trip x 3
    Py_ssize_t n_trip
    const double* prior     # d x d, or NULL
    double c
    double mu1
    double mu2
    double lam
    double eps
    Py_ssize_t batch


cdef struct Work:
    double* pos     # batch x d (x1 - x2 of active triplets)
    double* neg     # batch x d (x1 - x3 of active triplets)
    double* dif     # batch x d (pos - neg of every drawn triplet)
    double* sm      # batch x d (pos + neg of every drawn triplet)
    double* ys      # batch x d (A sm)


cdef Py_ssize_t _active_batch(Problem* pb, const double* A, Work* wk,
                              rng_state* rng) noexcept nogil:
    """Draw ``batch`` triplets uniformly; keep the difference vectors of those whose hinge
    ||x1-x2||_A^2 - ||x1-x3||_A^2 + 1 is positive at the current A.  Returns their count.
    ||a||_A^2 - ||b||_A^2 = (a - b)' A (a + b): the batch's mat-vecs are one BLAS dgemm."""
    cdef Py_ssize_t b, t, k, n_active = 0
    cdef Py_ssize_t d = pb.d, nb = pb.batch
    cdef double* a
    cdef double* bn
    cdef double* dif
    cdef double* sm
    cdef char trans = b'N'
    cdef int n = <int>d, m = <int>nb
    cdef double one = 1.0, zero = 0.0
    for b in range(nb):
        t = rng_randint(rng, pb.n_trip)
        a = wk.pos + b * d
        bn = wk.neg + b * d
        _diff(pb.X, pb.X32, d, pb.trip[3 * t], pb.trip[3 * t + 1], a)
        _diff(pb.X, pb.X32, d, pb.trip[3 * t], pb.trip[3 * t + 2], bn)
        dif = wk.dif + b * d
        sm = wk.sm + b * d
        for k in range(d):
            dif[k] = a[k] - bn[k]
            sm[k] = a[k] + bn[k]
    # ys (d x batch, column-major) = A sm
    _dgemm(&trans, &trans, &n, &m, &n, &one, <double*>A, &n, wk.sm, &n, &zero, wk.ys, &n)
    for b in range(nb):
        if _dot(wk.dif + b * d, wk.ys + b * d, d) + 1.0 > 0.0:
            if n_active != b:
                for k in range(d):
                    wk.pos[n_active * d + k] = wk.pos[b * d + k]
                    wk.neg[n_active * d + k] = wk.neg[b * d + k]
            n_active += 1
    return n_active


cdef void _gradient_step(Problem* pb, double* A, const double* src, Work* wk,
                         Py_ssize_t n_active, double step, double pen,
                         const double* u, bint mirror) noexcept nogil:
    """A = src - step * G (upper triangle; mirrored when ``mirror``), with the stochastic
    gradient G = (c / batch) sum_active (a a' - b b') + (1 - c) prior - pen u u'.
    ``A`` and ``src`` may be the same buffer.  The rank-n_active terms are two BLAS dsyrk
    calls (the row-major upper triangle is the column-major lower one)."""
    cdef Py_ssize_t d = pb.d
    cdef Py_ssize_t i, j
    cdef double coef = step * pb.c / pb.batch
    cdef double cprior = step * (1.0 - pb.c)
    cdef double cpen = step * pen
    cdef double ui
    cdef double* row
    cdef const double* srow
    cdef const double* prow
    cdef char uplo = b'L', trans = b'N'
    cdef int n = <int>d, k = <int>n_active
    cdef double alpha, beta = 1.0
    for i in range(d):
        row = A + i * d
        srow = src + i * d
        if pb.prior != NULL and cprior != 0.0:
            prow = pb.prior + i * d
            for j in range(i, d):
                row[j] = srow[j] - cprior * prow[j]
        elif row != srow:
            for j in range(i, d):
                row[j] = srow[j]
        if cpen != 0.0:
            ui = cpen * u[i]
            for j in range(i, d):
                row[j] += ui * u[j]
    if n_active > 0 and coef != 0.0:
        alpha = -coef
        _dsyrk(&uplo, &trans, &n, &k, &alpha, wk.pos, &n, &beta, A, &n)
        alpha = coef
        _dsyrk(&uplo, &trans, &n, &k, &alpha, wk.neg, &n, &beta, A, &n)
    if mirror:
        _mirror(A, d)


cdef void _work_null(Work* wk) noexcept nogil:
    wk.pos = NULL
    wk.neg = NULL
    wk.dif = NULL
    wk.sm = NULL
    wk.ys = NULL


cdef int _work_alloc(Work* wk, Py_ssize_t batch, Py_ssize_t d) noexcept nogil:
    wk.pos = <double*>malloc(batch * d * sizeof(double))
    wk.neg = <double*>malloc(batch * d * sizeof(double))
    wk.dif = <double*>malloc(batch * d * sizeof(double))
    wk.sm = <double*>malloc(batch * d * sizeof(double))
    wk.ys = <double*>malloc(batch * d * sizeof(double))
    if (wk.pos == NULL or wk.neg == NULL or wk.dif == NULL
            or wk.sm == NULL or wk.ys == NULL):
        return -1
    return 0


cdef void _work_free(Work* wk) noexcept nogil:
    free(wk.pos)
    free(wk.neg)
    free(wk.dif)
    free(wk.sm)
    free(wk.ys)


# LAPACK dsyevr workspace of the per-iteration projection (mode MODE_SGD only)
cdef struct Projection:
    double* acopy   # d x d
    double* w       # d
    double* z       # d x d
    int* isuppz     # 2 d
    double* work    # lwork
    int* iwork      # liwork
    int lwork
    int liwork


cdef int _projection_alloc(Projection* pj, Py_ssize_t d) noexcept nogil:
    pj.lwork = 26 * <int>d + 64
    pj.liwork = 10 * <int>d + 64
    pj.acopy = <double*>malloc(d * d * sizeof(double))
    pj.w = <double*>malloc(d * sizeof(double))
    pj.z = <double*>malloc(d * d * sizeof(double))
    pj.isuppz = <int*>malloc(2 * d * sizeof(int))
    pj.work = <double*>malloc(pj.lwork * sizeof(double))
    pj.iwork = <int*>malloc(pj.liwork * sizeof(int))
    if (pj.acopy == NULL or pj.w == NULL or pj.z == NULL or pj.isuppz == NULL
            or pj.work == NULL or pj.iwork == NULL):
        return -1
    return 0


cdef void _projection_free(Projection* pj) noexcept nogil:
    free(pj.acopy)
    free(pj.w)
    free(pj.z)
    free(pj.isuppz)
    free(pj.work)
    free(pj.iwork)


cdef int _project_in_place(double* A, Py_ssize_t d, double eps,
                           Projection* pj) noexcept nogil:
    """Frobenius projection onto {A >= eps I}: LAPACK dsyevr finds the eigenpairs with
    eigenvalue <= eps (O(d^3) reduction) and A += sum_k (eps - w_k) z_k z_k'.
    Returns the number of corrected eigenpairs, or -1 on a LAPACK failure."""
    cdef char jobz = b'V', rng_c = b'V', uplo = b'L'
    cdef int n = <int>d, lda = <int>d, il = 0, iu = 0, m = 0, ldz = <int>d, info = 0
    cdef double vl = -1e308, vu = eps, abstol = 0.0
    cdef Py_ssize_t i, j, k
    cdef double gap, zi
    cdef double* row
    cdef double* w = pj.w
    cdef double* z = pj.z
    for i in range(d * d):
        pj.acopy[i] = A[i]
    _dsyevr(&jobz, &rng_c, &uplo, &n, pj.acopy, &lda, &vl, &vu, &il, &iu, &abstol, &m, w, z,
            &ldz, pj.isuppz, pj.work, &pj.lwork, pj.iwork, &pj.liwork, &info)
    if info != 0:
        return -1
    for k in range(m):
        gap = eps - w[k]
        if gap <= 0.0:
            continue
        for i in range(d):
            row = A + i * d
            zi = gap * z[k * d + i]     # column k of z (column-major)
            for j in range(i, d):
                row[j] += zi * z[k * d + j]
    _mirror(A, d)
    return m


cdef class Tables:
    """Per-fit tables of the LMNN kernels, built once per fit: the data, the current triplet
    table, the prior matrix, the hyper-parameters of Eq. (21), the counter-based generator's
    key and the workspaces of the stochastic gradient and of the Lanczos check (allocated
    once, reused by every :func:`run_sgd` / :func:`run_orda` call).

    Parameters
    ----------
    X : (n, d) float64 or float32, C-contiguous
        float32 rows are read as float32 and widened to double in the kernels (no float64
        copy of X).
    triplets : (N, 3) int32, indices into X (validated by the caller; see ``set_triplets``)
    prior : (d, d) float64 or None
    c, mu1, mu2, lam, eps : float
        Hinge weight, Frobenius and off-diagonal l1 weights, penalty multiplier and
        eigenvalue bound of Eq. (21) and the augmented objective.
    batch : int
        Triplets per stochastic gradient.
    lanczos_steps : int
        Lanczos steps of the per-iteration lambda_min estimate (at most d are used).
    seed, stream : int
        Key of the two random streams (triplet draws: 2 stream, Lanczos restarts:
        2 stream + 1); their counters are the caller's state.
    """
    cdef Problem pb
    cdef Work wk
    cdef Lanczos lz
    cdef const double[:, ::1] X
    cdef const float[:, ::1] X32
    cdef const int32_t[:, ::1] triplets
    cdef const double[:, ::1] prior
    cdef readonly uint64_t seed, stream

    def __cinit__(self, X, const int32_t[:, ::1] triplets, prior,
                  double c, double mu1, double mu2, double lam, double eps, Py_ssize_t batch,
                  Py_ssize_t lanczos_steps, uint64_t seed, uint64_t stream=0):
        cdef Py_ssize_t n, d
        _work_null(&self.wk)
        _lanczos_null(&self.lz)
        cdef bint single = getattr(X, "dtype", None) == np.float32
        self.pb.X = NULL
        self.pb.X32 = NULL
        if single:
            self.X32 = X
            n, d = self.X32.shape[0], self.X32.shape[1]
        else:
            self.X = X
            n, d = self.X.shape[0], self.X.shape[1]
        if batch < 1 or lanczos_steps < 1 or n < 1 or d < 1:
            raise ValueError("need a non-empty X, batch >= 1 and lanczos_steps >= 1")
        if single:
            self.pb.X32 = &self.X32[0, 0]
        else:
            self.pb.X = &self.X[0, 0]
        self.pb.n = n
        self.pb.d = d
        self.pb.prior = NULL
        if prior is not None:
            self.prior = prior
            if self.prior.shape[0] != d or self.prior.shape[1] != d:
                raise ValueError("prior must be (d, d)")
            self.pb.prior = &self.prior[0, 0]
        self.pb.c = c
        self.pb.mu1 = mu1
        self.pb.mu2 = mu2
        self.pb.lam = lam
        self.pb.eps = eps
        self.pb.batch = batch
        self.seed = seed
        self.stream = stream
        self.set_triplets(triplets)
        if _work_alloc(&self.wk, batch, d) != 0 or \
                _lanczos_alloc(&self.lz, d, min(lanczos_steps, d)) != 0:
            raise MemoryError()

    def __dealloc__(self):
        _work_free(&self.wk)
        _lanczos_free(&self.lz)

    def set_triplets(self, const int32_t[:, ::1] triplets):
        """Replace the triplet table (indices validated by the caller)."""
        if triplets.shape[0] < 1 or triplets.shape[1] != 3:
            raise ValueError("triplets must be a non-empty (N, 3) table")
        self.triplets = triplets
        self.pb.trip = &triplets[0, 0]
        self.pb.n_trip = triplets.shape[0]


cdef int _begin(Tables tb, const double[:, ::1] a, const double[:, ::1] b, double[::1] u,
                uint64_t[::1] counters, rng_state* rng_t, rng_state* rng_l) except -1:
    """Entry of run_sgd / run_orda: check the two (d, d) matrices, the eigenvector estimate
    and the counters against the tables, and resume the triplet and Lanczos streams."""
    cdef Py_ssize_t d = tb.pb.d
    if a.shape[0] != d or a.shape[1] != d or b.shape[0] != d or b.shape[1] != d:
        raise ValueError("the matrices must be (d, d)")
    if u.shape[0] != d or counters.shape[0] != 2:
        raise ValueError("u must be (d,) and counters (2,)")
    rng_init(rng_t, tb.seed, 2 * tb.stream, counters[0])
    rng_init(rng_l, tb.seed, 2 * tb.stream + 1, counters[1])
    return 0


cdef inline double _penalty(int mode, double lam, double eps, double theta, double gamma,
                            Py_ssize_t* n_viol) noexcept nogil:
    """Multiplier of -u u' in the gradient: lam [eps - theta]_+'s subgradient (MODE_EPRO) or
    the derivative of gamma log(1 + exp(lam (eps - theta) / gamma)) (MODE_ONEPROJ)."""
    cdef double arg
    if mode == MODE_EPRO:
        if eps - theta > 0.0:
            n_viol[0] += 1
            return lam
        return 0.0
    arg = lam * (eps - theta) / gamma
    if arg > 0.0:
        n_viol[0] += 1
        return lam / (1.0 + exp(-arg))
    return lam * exp(arg) / (1.0 + exp(arg))


def run_sgd(Tables tables, double[:, ::1] A, double[:, ::1] avg, double[::1] u,
            uint64_t[::1] counters, int mode, double eta, int64_t t0, int64_t n_steps,
            double gamma=1.0, double decay=8.0):
    """Run ``n_steps`` stochastic (proximal) subgradient steps on A in place.

    Parameters
    ----------
    tables : Tables
    A : (d, d) float64, symmetric; start point on entry, last iterate x_{T+1} on exit.
    avg : (d, d) float64; on exit the mean of the iterates x_1..x_T (start included).
    u : (d,) float64; eigenvector estimate of lambda_min (warm start, updated).
    counters : (2,) uint64; RNG counters of the triplet stream and the Lanczos stream
        (updated).
    mode : 0 epro (step ``eta``, penalty lam [eps - lambda_min]_+), 1 sgd (projection every
        iteration, step eta / (1 + (t0 + t) / decay)), 2 oneproj (smoothed penalty with
        ``gamma``, same step rule as sgd).
    t0 : iterations already done before this call (step rule of modes 1 and 2).

    Returns
    -------
    n_active : int
        Number of active (positive hinge) sampled triplets.
    n_violations : int
        Iterations whose Lanczos estimate of lambda_min was below eps (modes 0, 2) or whose
        projection changed A (mode 1).
    """
    cdef Problem pb = tables.pb
    cdef Work wk = tables.wk
    cdef Lanczos lz = tables.lz
    cdef Projection pj
    cdef rng_state rng_t, rng_l
    cdef Py_ssize_t d = pb.d
    cdef int64_t t
    cdef Py_ssize_t i, n_act, total_active = 0, n_viol = 0
    cdef double step, pen
    cdef int status = 0
    cdef bint has_prox = pb.mu1 != 0.0 or pb.mu2 != 0.0
    cdef double* pavg
    cdef double* pA
    if mode != MODE_EPRO and mode != MODE_SGD and mode != MODE_ONEPROJ:
        raise ValueError(f"unknown mode {mode}")
    _begin(tables, A, avg, u, counters, &rng_t, &rng_l)
    if mode == MODE_SGD and _projection_alloc(&pj, d) != 0:
        _projection_free(&pj)
        raise MemoryError()
    pavg = &avg[0, 0]
    pA = &A[0, 0]
    with nogil:
        for i in range(d * d):
            pavg[i] = 0.0
        for t in range(n_steps):
            for i in range(d * d):
                pavg[i] += pA[i]
            step = eta if mode == MODE_EPRO else eta / (1.0 + (t0 + t) / decay)
            pen = 0.0
            if mode != MODE_SGD:
                pen = _penalty(mode, pb.lam, pb.eps, _lanczos_min(pA, &u[0], &lz, &rng_l),
                               gamma, &n_viol)
            n_act = _active_batch(&pb, pA, &wk, &rng_t)
            total_active += n_act
            _gradient_step(&pb, pA, pA, &wk, n_act, step, pen, &u[0], not has_prox)
            if has_prox:
                _prox(pA, d, step * pb.mu1, step * pb.mu2)   # mirrors A
            if mode == MODE_SGD:
                status = _project_in_place(pA, d, pb.eps, &pj)
                if status < 0:
                    break
                if status > 0:
                    n_viol += 1
                status = 0
        if n_steps > 0:
            for i in range(d * d):
                pavg[i] /= n_steps
    counters[0] = rng_t.counter
    counters[1] = rng_l.counter
    if mode == MODE_SGD:
        _projection_free(&pj)
    if status < 0:
        raise np.linalg.LinAlgError("LAPACK dsyevr failed in the per-iteration projection")
    return total_active, n_viol


def run_orda(Tables tables, const double[:, ::1] x1, double[:, ::1] out, double[::1] u,
             uint64_t[::1] counters, double eta, int64_t n_steps, bint at_u=False):
    """ORDA (paper 001, Algorithm 2) on the augmented objective of Eq. (16) from x1, with
    T = ``n_steps`` (T + 1 stochastic gradient calls).  ``out`` receives x_{T+2}.

    theta_t = 2/(t+1), gamma_t = t^1.5 / eta, u_t = (1 - theta_t) x_t + theta_t z_t,
    G_t = g(p_t) + lam d[eps - lambda_min(p_t)]_+ with p_t = x_t (``at_u=False``, as the
    paper writes) or p_t = u_t (``at_u=True``, the original ORDA of Chen, Lin & Pena 2012),
    gbar_t = 2 S_t / (t(t+1)) with S_t = sum_tau tau G_tau,
    z_{t+1} = prox_{g/a_t}(x1 - gbar_t / a_t), a_t = 4 sqrt(t+1) / (t eta),
    x_{t+1} = prox_{g/gamma_t}(u_t - G_t / gamma_t).

    ``u`` and ``counters`` are the state of :func:`run_sgd`.  Returns (n_active,
    n_violations) as :func:`run_sgd`.
    """
    cdef Problem pb = tables.pb
    cdef Work wk = tables.wk
    cdef Lanczos lz = tables.lz
    cdef rng_state rng_t, rng_l
    cdef Py_ssize_t d = pb.d, dd = pb.d * pb.d
    cdef int64_t t
    cdef Py_ssize_t i, n_act, total_active = 0, n_viol = 0
    cdef double theta_t, gamma_t, a_t, pen, tt
    cdef const double* px1
    cdef double* x
    cdef double* z
    cdef double* S
    cdef double* G
    cdef double* zero
    cdef double* ut
    cdef double* point
    _begin(tables, x1, out, u, counters, &rng_t, &rng_l)
    x = <double*>malloc(dd * sizeof(double))
    z = <double*>malloc(dd * sizeof(double))
    S = <double*>malloc(dd * sizeof(double))
    G = <double*>malloc(dd * sizeof(double))
    zero = <double*>malloc(dd * sizeof(double))
    ut = <double*>malloc(dd * sizeof(double))
    if x == NULL or z == NULL or S == NULL or G == NULL or zero == NULL or ut == NULL:
        free(x); free(z); free(S); free(G); free(zero); free(ut)
        raise MemoryError()
    px1 = &x1[0, 0]
    with nogil:
        for i in range(dd):
            x[i] = px1[i]
            z[i] = px1[i]
            S[i] = 0.0
            zero[i] = 0.0
        for t in range(1, n_steps + 2):
            tt = <double>t
            theta_t = 2.0 / (tt + 1.0)
            gamma_t = tt * sqrt(tt) / eta
            a_t = 4.0 * sqrt(tt + 1.0) / (tt * eta)
            # u_t = (1 - theta_t) x_t + theta_t z_t
            for i in range(dd):
                ut[i] = (1.0 - theta_t) * x[i] + theta_t * z[i]
            point = ut if at_u else x
            # G_t at the gradient point (the gradient step from zero gives -G_t)
            pen = _penalty(MODE_EPRO, pb.lam, pb.eps, _lanczos_min(point, &u[0], &lz, &rng_l),
                           1.0, &n_viol)
            n_act = _active_batch(&pb, point, &wk, &rng_t)
            total_active += n_act
            _gradient_step(&pb, G, zero, &wk, n_act, 1.0, pen, &u[0], True)   # G = -G_t
            for i in range(dd):
                S[i] -= tt * G[i]
                # x_{t+1} = prox_{g/gamma_t}(u_t - G_t / gamma_t)
                x[i] = ut[i] + G[i] / gamma_t
                # z_{t+1} = prox_{g/a_t}(x1 - gbar_t / a_t)
                z[i] = px1[i] - (2.0 * S[i] / (tt * (tt + 1.0))) / a_t
            _prox(x, d, pb.mu1 / gamma_t, pb.mu2 / gamma_t)
            _prox(z, d, pb.mu1 / a_t, pb.mu2 / a_t)
        for i in range(dd):
            (&out[0, 0])[i] = x[i]
    counters[0] = rng_t.counter
    counters[1] = rng_l.counter
    free(x); free(z); free(S); free(G); free(zero); free(ut)
    return total_active, n_viol


def triplet_hinge(const double[:, ::1] P, const int32_t[:, ::1] triplets,
                  double total=0.0, Py_ssize_t n_active=0):
    """Sum over triplets (i, j, l) of max(0, ||P_i - P_j||^2 - ||P_i - P_l||^2 + 1) and the
    number of positive terms, for P = X R with A = R R' (so ||P_i - P_j||^2 = ||x_i - x_j||_A^2).
    O(N k) for N triplets and k columns of P; indices validated by the caller.  ``total`` and
    ``n_active`` continue a sum begun on earlier blocks of the same table (the terms are
    added in the table's order either way)."""
    cdef Py_ssize_t N = triplets.shape[0], k = P.shape[1]
    cdef Py_ssize_t t, q, i, j, l
    cdef double dp, dn, v
    if triplets.shape[1] != 3:
        raise ValueError("triplets must be (N, 3)")
    with nogil:
        for t in range(N):
            i = triplets[t, 0]
            j = triplets[t, 1]
            l = triplets[t, 2]
            dp = 0.0
            dn = 0.0
            for q in range(k):
                v = P[i, q] - P[j, q]
                dp += v * v
                v = P[i, q] - P[l, q]
                dn += v * v
            v = dp - dn + 1.0
            if v > 0.0:
                total += v
                n_active += 1
    return total, n_active


def select_ksmallest(const double[:, ::1] G, const double[::1] sq_c, const int64_t[::1] yq,
                     const int64_t[::1] yc, const int64_t[::1] exclude, Py_ssize_t q,
                     int64_t[:, ::1] out):
    """Neighbour selection of one block of a search: for each row a of G = Zq Zc' (one BLAS
    GEMM done by the caller), the columns b of the q smallest ``sq_c[b] - 2 G[a, b]`` (the
    squared distance ||z_a - z_b||^2 up to the row constant ||z_a||^2), in increasing order
    (ties: the lower column first), skipping the columns with ``yc[b] == yq[a]`` when
    ``yq``/``yc`` are non-empty and the column ``exclude[a]`` when ``exclude`` is non-empty.

    One pass over the block with a sorted insertion buffer of q entries: O(n_q n_c) plus
    O(q) per accepted candidate, no n_q x n_c temporaries (the former numpy version made
    four passes, a boolean mask and q argmin/argpartition passes).  Returns the smallest
    number of admissible columns found in a row (the caller raises when it is below q, so
    no unfilled slot, marked -1, is ever used as an index)."""
    cdef Py_ssize_t n_q = G.shape[0], n_c = G.shape[1]
    cdef Py_ssize_t a, b, r, found, min_found = n_c
    cdef bint use_labels = yq.shape[0] > 0, use_exclude = exclude.shape[0] > 0
    cdef double v
    cdef int64_t label
    cdef double* best
    if q < 1 or out.shape[0] != n_q or out.shape[1] != q or sq_c.shape[0] != n_c:
        raise ValueError("select_ksmallest: inconsistent shapes")
    if use_labels and (yq.shape[0] != n_q or yc.shape[0] != n_c):
        raise ValueError("select_ksmallest: label arrays do not match G")
    if use_exclude and exclude.shape[0] != n_q:
        raise ValueError("select_ksmallest: exclude does not match G")
    best = <double*>malloc(q * sizeof(double))
    if best == NULL:
        raise MemoryError()
    with nogil:
        for a in range(n_q):
            found = 0
            label = yq[a] if use_labels else -1
            for r in range(q):
                best[r] = INFINITY
                out[a, r] = -1
            for b in range(n_c):
                if use_labels and yc[b] == label:
                    continue
                if use_exclude and exclude[a] == b:
                    continue
                found += 1
                v = sq_c[b] - 2.0 * G[a, b]
                if v < best[q - 1]:
                    r = q - 1
                    while r > 0 and best[r - 1] > v:
                        best[r] = best[r - 1]
                        out[a, r] = out[a, r - 1]
                        r -= 1
                    best[r] = v
                    out[a, r] = b
            if found < min_found:
                min_found = found
    free(best)
    return min_found


def grouped_hinge(const double[:, ::1] P, const int32_t[::1] anchors,
                  const int32_t[:, ::1] targets, const int32_t[:, ::1] impostors,
                  double total=0.0, Py_ssize_t n_active=0):
    """Hinge sum and active count of the triplet table of the 'knn' recipe, given by its
    structure: anchor a, its k targets ``targets[a]`` and q impostors ``impostors[a]`` make
    the k q triplets (a, j, l).  The same value as ``triplet_hinge`` on the expanded table
    (up to round-off), but each distance is computed once: O(n_a (k + q) c + n_a k q) for
    c columns of P instead of O(2 n_a k q c).  Indices validated by the caller.  ``total``
    and ``n_active`` continue a sum begun on earlier anchors (as ``triplet_hinge``)."""
    cdef Py_ssize_t n_a = anchors.shape[0], k = targets.shape[1], q = impostors.shape[1]
    cdef Py_ssize_t c = P.shape[1]
    cdef Py_ssize_t a, j, r, s, i
    cdef double v, dist
    cdef double* buf
    if targets.shape[0] != n_a or impostors.shape[0] != n_a:
        raise ValueError("grouped_hinge: anchors, targets and impostors do not match")
    buf = <double*>malloc((k + q + 1) * sizeof(double))
    if buf == NULL:
        raise MemoryError()
    with nogil:
        for a in range(n_a):
            i = anchors[a]
            for j in range(k + q):
                s = targets[a, j] if j < k else impostors[a, j - k]
                dist = 0.0
                for r in range(c):
                    v = P[i, r] - P[s, r]
                    dist += v * v
                buf[j] = dist
            for j in range(k):
                for r in range(q):
                    v = buf[j] - buf[k + r] + 1.0
                    if v > 0.0:
                        total += v
                        n_active += 1
    free(buf)
    return total, n_active
