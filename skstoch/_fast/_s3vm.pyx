# Kernels of S3VMClassifier: triply stochastic functional gradients (Geng et al., IJCAI 2019).
#
# A model is a list of T blocks; block i holds m random Fourier features
#     phi_i(x)_k = sqrt(2 / m) * cos(<omega_ik, x> + b_ik),  omega_ik ~ N(0, 2 gamma I), b_ik ~ U[0, 2 pi)
# and a coefficient matrix alpha_i of shape (n_heads, m); f_h(x) = sum_i <alpha_i[h], phi_i(x)>.
#
# (omega_i, b_i) is a pure function of (seed, i): block i's key is the first draw of stream
# FEATURE_STREAM(i) of the counter-based generator of _random.pxd; column j of omega_i (its m
# frequencies on input coordinate j) is stream j of that key and the offsets are its stream
# 2**64 - 1.  So fit and predict regenerate bit-identical features (Algorithm 2 of the paper),
# nothing but alpha needs to be stored, and the columns of omega can be generated one by one:
# on sparse X only the coordinates that occur are generated (O(m nnz-columns), not O(m d)).
# The sample batches of iteration i come from stream SAMPLE_STREAM(i).
#
# Python validates every index before calling in here (no bounds checks in the kernels).
from libc.math cimport sqrt
from libc.stdint cimport int32_t, int64_t, uint64_t
from libc.stdlib cimport malloc, free

from ._dataset cimport RowDataset, rows_t, rowvals_t, dataset_row
from ._random cimport rng_state, rng_init, rng_normal, rng_uniform, rng_randint, rng_u64

cdef double TWO_PI = 6.283185307179586


cdef inline uint64_t feature_stream(Py_ssize_t block) noexcept nogil:
    return 2 * <uint64_t>block


cdef inline uint64_t sample_stream(Py_ssize_t block) noexcept nogil:
    return 2 * <uint64_t>block + 1


cdef void gen_block(uint64_t seed, Py_ssize_t block, Py_ssize_t m, Py_ssize_t d, double scale,
                    double* omega, double* offset, const int64_t* cols) noexcept nogil:
    """omega (m x d, row k = omega_k) = scale * N(0, 1); offset (m) = U[0, 2 pi).

    Column j of omega holds input coordinate ``cols[j]`` (coordinate j when cols is NULL):
    its m normals come from stream ``cols[j]`` of the block key, the offsets from stream
    2**64 - 1 of it."""
    cdef rng_state s
    cdef Py_ssize_t k, j
    cdef uint64_t block_key
    rng_init(&s, seed, feature_stream(block), 0)
    block_key = rng_u64(&s)
    for j in range(d):
        rng_init(&s, block_key, <uint64_t>(cols[j] if cols != NULL else j), 0)
        for k in range(m):
            omega[k * d + j] = scale * rng_normal(&s)
    rng_init(&s, block_key, <uint64_t>0 - 1, 0)
    for k in range(m):
        offset[k] = TWO_PI * rng_uniform(&s)


# skstoch_row_features (C, below): the m features of one row. The dot products are
# accumulated together, one input coordinate at a time (m independent sums that vectorise);
# each sum adds the terms in increasing coordinate order from 0.0, so it is bitwise
# ``row_dot(x_i, omega_k)`` (no FMA: -ffp-contract=off and no FMA target). The cosine, on
# |argument| <= 1e5, is Cody-Waite reduction with fdlibm's three-part pi/2 and fdlibm's
# minimax sin / cos kernels on [-pi/4, pi/4] (a feature within 2 ulp, 6e-17 absolute, of
# libm's on 10^6 points of |x| <= 1e5), written without branches so the loop vectorises:
# 4-5x faster than a scalar libm call per feature, which was 85% of an S3VM fit on
# low-dimensional data (8192 pool rows x 64 features per iteration); a row with a larger or
# non-finite argument uses libm's cos. With GCC on x86-64 Linux the function is also compiled
# for AVX2 and picked at run time: AVX2 without FMA runs the same IEEE operations in the same
# order, so every version gives bitwise the same features. The dot products are in the AVX2
# version too: with only the cosine there, a 20-column row was 8-10% slower than without
# AVX2 (its 32-byte loads read what the SSE2 loop had just stored 16 bytes at a time).
cdef extern from *:
    """
    #include <math.h>
    #include <stdint.h>
    #if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
    #define SKSTOCH_S3VM_CLONES __attribute__((target_clones("avx2", "default")))
    #else
    #define SKSTOCH_S3VM_CLONES
    #endif
    #define SKSTOCH_FAST_COS_MAX 1.0e5
    static inline double skstoch_fast_cos(double x) {
        const double inv_pio2 = 6.36619772367581382433e-01;
        const double pio2_1 = 1.57079632673412561417e+00;   /* first 33 bits of pi / 2 */
        const double pio2_2 = 6.07710050630396597660e-11;   /* next 33 bits */
        const double pio2_2t = 2.02226624879595063154e-21;  /* pi / 2 - pio2_1 - pio2_2 */
        const double shift = 6755399441055744.0;            /* 1.5 * 2^52: (y + it) - it rounds y */
        double q = (x * inv_pio2 + shift) - shift;           /* nearest quadrant */
        double r = ((x - q * pio2_1) - q * pio2_2) - q * pio2_2t;
        double z = r * r;
        double s = r + r * z * (-1.66666666666666324348e-01 + z * (8.33333333332248946124e-03
            + z * (-1.98412698298579493134e-04 + z * (2.75573137070700676789e-06
            + z * (-2.50507602534068634195e-08 + z * 1.58969099521155010221e-10)))));
        double c = 1.0 - 0.5 * z + z * z * (4.16666666666666019037e-02 + z * (
            -1.38888888888741095749e-03 + z * (2.48015872894767294178e-05 + z * (
            -2.75573143513906633035e-07 + z * (2.08757232129817482790e-09
            - z * 1.13596475577881948265e-11)))));
        int32_t k = (int32_t)q;
        /* quadrant k mod 4: cos(x) = c, -s, -c, s; selected by exact 0/1 and +-1 products */
        double odd = (double)(k & 1);
        double sign = 1.0 - (double)((k + 1) & 2);
        return (s * odd + c * (1.0 - odd)) * sign;
    }
    /* out[k] = norm cos(<omega_k, x> + offset[k]) for a row of nnz stored values (f64, else
       f32 widened exactly) at columns indices (NULL: dense); omega_t is d x m */
    SKSTOCH_S3VM_CLONES
    static void skstoch_row_features(const double* f64, const float* f32,
                                     const int32_t* indices, int nnz, const double* omega_t,
                                     const double* offset, Py_ssize_t m, double norm,
                                     double* out) {
        Py_ssize_t k;
        int p, wide = 0;
        for (k = 0; k < m; k++)
            out[k] = 0.0;
        for (p = 0; p < nnz; p++) {
            double xj = f32 != NULL ? (double)f32[p] : f64[p];
            const double* w = omega_t + (Py_ssize_t)(indices == NULL ? p : indices[p]) * m;
            for (k = 0; k < m; k++)
                out[k] += xj * w[k];
        }
        for (k = 0; k < m; k++)
            out[k] += offset[k];
        for (k = 0; k < m; k++)
            wide |= !(fabs(out[k]) <= SKSTOCH_FAST_COS_MAX);
        if (wide) {
            for (k = 0; k < m; k++)
                out[k] = norm * cos(out[k]);
        } else {
            for (k = 0; k < m; k++)
                out[k] = norm * skstoch_fast_cos(out[k]);
        }
    }
    """
    void c_row_features "skstoch_row_features"(
        const double* f64, const float* f32, const int32_t* indices, int nnz,
        const double* omega_t, const double* offset, Py_ssize_t m, double norm,
        double* out) noexcept nogil


cdef void transpose(const double* omega, Py_ssize_t m, Py_ssize_t d,
                    double* omega_t) noexcept nogil:
    """omega_t (d x m) = omega (m x d) transposed."""
    cdef Py_ssize_t k, j
    for k in range(m):
        for j in range(d):
            omega_t[j * m + k] = omega[k * d + j]


cdef inline void row_features(const rows_t* X, Py_ssize_t i, const double* omega_t,
                              const double* offset, Py_ssize_t m, double norm,
                              double* out) noexcept nogil:
    """out[k] = norm * cos(<omega_k, x_i> + b_k), omega_t the transposed block (d x m)
    (``skstoch_row_features`` above)."""
    cdef rowvals_t data
    cdef const int32_t* indices
    cdef int nnz = dataset_row(X, i, &data, &indices)
    c_row_features(data.f64, data.f32, indices, nnz, omega_t, offset, m, norm, out)


def random_block(uint64_t seed, Py_ssize_t block, double scale, double[:, ::1] omega,
                 double[::1] offset, const int64_t[::1] cols=None):
    """Fill ``omega`` (m, d) and ``offset`` (m,) with the features of ``block``; with
    ``cols`` (d,), column j of omega is input coordinate ``cols[j]`` (each >= 0)."""
    if omega.shape[0] != offset.shape[0]:
        raise ValueError("omega and offset disagree on the number of features")
    if cols is not None and cols.shape[0] != omega.shape[1]:
        raise ValueError("cols must give one input coordinate per column of omega")
    cdef const int64_t* cp = NULL
    if cols is not None and cols.shape[0] > 0:
        cp = &cols[0]
    with nogil:
        gen_block(seed, block, omega.shape[0], omega.shape[1], scale, &omega[0, 0], &offset[0],
                  cp)


def block_features(RowDataset ds, const int64_t[::1] rows, const double[:, ::1] omega,
                   const double[::1] offset, double[:, ::1] out):
    """out[p] = phi(x_{rows[p]}) for one block (test / transform hook)."""
    cdef Py_ssize_t p, m = omega.shape[0], d = omega.shape[1]
    cdef double norm = sqrt(2.0 / m)
    cdef double* omega_t = <double*>malloc((m * d + 1) * sizeof(double))
    if omega_t == NULL:
        raise MemoryError()
    try:
        with nogil:
            transpose(&omega[0, 0], m, d, omega_t)
            for p in range(rows.shape[0]):
                row_features(&ds.rows, rows[p], omega_t, &offset[0], m, norm, &out[p, 0])
    finally:
        free(omega_t)


def sample_batch(uint64_t seed, Py_ssize_t block, Py_ssize_t n_labeled, Py_ssize_t n_unlabeled,
                 int64_t[::1] pos_labeled, int64_t[::1] pos_unlabeled):
    """Uniform draws with replacement: positions in the labeled and unlabeled pools
    (labeled draws first, then unlabeled, on one stream per iteration)."""
    cdef rng_state s
    cdef Py_ssize_t p
    with nogil:
        rng_init(&s, seed, sample_stream(block), 0)
        if n_labeled > 0:
            for p in range(pos_labeled.shape[0]):
                pos_labeled[p] = rng_randint(&s, n_labeled)
        if n_unlabeled > 0:
            for p in range(pos_unlabeled.shape[0]):
                pos_unlabeled[p] = rng_randint(&s, n_unlabeled)


cdef inline uint64_t edge_stream(Py_ssize_t block) noexcept nogil:
    # a third family of streams, disjoint from 2 i and 2 i + 1 for every iteration i < 2**62
    return (<uint64_t>1 << 63) | <uint64_t>block


def sample_edges(uint64_t seed, Py_ssize_t block, const int64_t[:, ::1] neighbors,
                 int64_t[::1] src, int64_t[::1] dst):
    """Uniform draws with replacement of directed kNN-graph edges (node, one of its k
    neighbours) for the manifold term of iteration ``block``: src[p] ~ U{0..n-1} and
    dst[p] = neighbors[src[p], U{0..k-1}] (Python checks that every neighbour index is in
    [0, n))."""
    cdef rng_state s
    cdef Py_ssize_t p, n = neighbors.shape[0], k = neighbors.shape[1]
    cdef int64_t u
    if n == 0 or k == 0:
        return
    with nogil:
        rng_init(&s, seed, edge_stream(block), 0)
        for p in range(src.shape[0]):
            u = rng_randint(&s, n)
            src[p] = u
            dst[p] = neighbors[u, rng_randint(&s, k)]


cdef class FeatureBlocks:
    """The random Fourier feature blocks of one model, for :func:`decision`.

    Block ``i`` is regenerated from ``(seed, i)`` (Algorithm 2), or read from the cache
    ``omega[i]`` (m x d), ``offset[i]`` (m) when both are given (the cache must then hold
    every block a call reads; Python checks the shapes).

    Parameters
    ----------
    seed : int
    scale : float
        ``sqrt(2 gamma)``: the frequencies are ``scale * N(0, 1)``.
    n_components, n_features : int
        m and d.
    omega, offset : float64 arrays of shape (n_cached, m, d) and (n_cached, m), or None
    cols : int64 array of shape (d,) or None
        Regenerated blocks only: feature column j is input coordinate ``cols[j]`` (X then has
        its columns compressed to ``cols``).
    """
    cdef readonly uint64_t seed
    cdef readonly double scale
    cdef readonly Py_ssize_t m, d
    cdef readonly bint cached
    cdef const double[:, :, ::1] omega
    cdef const double[:, ::1] offset
    cdef const int64_t[::1] cols
    cdef bint has_cols

    def __init__(self, uint64_t seed, double scale, Py_ssize_t n_components,
                 Py_ssize_t n_features, omega=None, offset=None, cols=None):
        if (omega is None) != (offset is None):
            raise ValueError("omega and offset are cached together or not at all")
        self.has_cols = cols is not None
        if self.has_cols:
            if omega is not None:
                raise ValueError("cols is only for regenerated blocks")
            self.cols = cols
            if self.cols.shape[0] != n_features:
                raise ValueError("cols must hold n_features input coordinates")
            if self.cols.shape[0] and min(cols) < 0:
                raise ValueError("cols must be >= 0")
        self.seed = seed
        self.scale = scale
        self.m = n_components
        self.d = n_features
        self.cached = omega is not None
        if self.cached:
            self.omega = omega
            self.offset = offset
            if (self.omega.shape[1] != self.m or self.omega.shape[2] != self.d
                    or self.offset.shape[0] != self.omega.shape[0]
                    or self.offset.shape[1] != self.m):
                raise ValueError("the cached omega / offset do not match (n_components, "
                                 "n_features)")

    def check(self, Py_ssize_t n_components, Py_ssize_t n_features, Py_ssize_t n_blocks):
        """Raise ValueError unless the blocks have this shape and hold ``n_blocks`` blocks."""
        if n_components != self.m or n_features != self.d:
            raise ValueError("alpha / X disagree with the feature blocks on (n_components, "
                             "n_features)")
        if self.cached and n_blocks > self.n_cached:
            raise ValueError("fewer cached feature blocks than n_blocks")

    @property
    def n_cached(self):
        """Number of cached blocks (0 when the blocks are regenerated)."""
        return self.omega.shape[0] if self.cached else 0


cdef void add_decision(FeatureBlocks blocks, const rows_t* X, const int64_t[::1] rows,
                       const double[:, :, ::1] alpha, Py_ssize_t n_blocks, double[:, ::1] out,
                       Py_ssize_t chunk, double* work) noexcept nogil:
    """The loop of :func:`decision` (``work`` holds 2 m d + 2 m doubles)."""
    cdef uint64_t seed = blocks.seed
    cdef double scale = blocks.scale
    cdef bint use_cache = blocks.cached
    cdef const int64_t* cols = NULL
    if blocks.has_cols and blocks.cols.shape[0] > 0:
        cols = &blocks.cols[0]
    cdef const double[:, :, ::1] omega_cache = blocks.omega
    cdef const double[:, ::1] offset_cache = blocks.offset
    cdef Py_ssize_t n = rows.shape[0]
    cdef Py_ssize_t m = alpha.shape[2], K = alpha.shape[1], d = X.n_features
    cdef double norm = sqrt(2.0 / m)
    cdef Py_ssize_t start, stop, i, p, k, h
    cdef double acc
    cdef const double* om
    cdef const double* off
    cdef const double* a
    cdef double* w_om = work
    cdef double* w_off = work + m * d
    cdef double* phi = work + m * d + m
    cdef double* om_t = work + m * d + 2 * m
    start = 0
    while start < n:
        stop = start + chunk if start + chunk < n else n
        for i in range(n_blocks):
            if use_cache:
                om = &omega_cache[i, 0, 0]
                off = &offset_cache[i, 0]
            else:
                gen_block(seed, i, m, d, scale, w_om, w_off, cols)
                om = w_om
                off = w_off
            transpose(om, m, d, om_t)
            for p in range(start, stop):
                row_features(X, rows[p], om_t, off, m, norm, phi)
                for h in range(K):
                    a = &alpha[i, h, 0]
                    acc = 0.0
                    for k in range(m):
                        acc += a[k] * phi[k]
                    out[p, h] += acc
        start = stop


def decision(FeatureBlocks blocks, RowDataset ds, const int64_t[::1] rows,
             const double[:, :, ::1] alpha, Py_ssize_t n_blocks, double[:, ::1] out,
             Py_ssize_t chunk=2048):
    """out[p, h] += sum_{i < n_blocks} <alpha[i, h], phi_i(x_{rows[p]})>  (Algorithm 2).

    Rows are processed in chunks; inside a chunk the blocks are visited in order, each block's
    features taken from the cache or regenerated once per chunk, so memory is O(m d) besides
    the output, and the sum over blocks runs in the same order for every row (the result of a
    row does not depend on the chunk it falls in)."""
    cdef Py_ssize_t m = alpha.shape[2], d = ds.rows.n_features
    blocks.check(m, d, n_blocks)
    cdef double* work = <double*>malloc((2 * m * d + 2 * m + 1) * sizeof(double))
    if work == NULL:
        raise MemoryError()
    try:
        with nogil:
            add_decision(blocks, &ds.rows, rows, alpha, n_blocks, out, chunk, work)
    finally:
        free(work)


def block_gradient(RowDataset ds, const int64_t[::1] rows, const double[:, ::1] coef,
                   const double[:, ::1] omega, const double[::1] offset, double[:, ::1] out):
    """out[h, k] += sum_p coef[p, h] * phi(x_{rows[p]})_k  (the functional-gradient block)."""
    cdef Py_ssize_t n = rows.shape[0], m = omega.shape[0], d = omega.shape[1]
    cdef Py_ssize_t K = coef.shape[1], p, k, h
    cdef double norm = sqrt(2.0 / m)
    cdef double c
    cdef double* phi = <double*>malloc((m * d + m + 1) * sizeof(double))
    cdef double* omega_t = phi + m
    if phi == NULL:
        raise MemoryError()
    try:
        with nogil:
            transpose(&omega[0, 0], m, d, omega_t)
            for p in range(n):
                row_features(&ds.rows, rows[p], omega_t, &offset[0], m, norm, phi)
                for h in range(K):
                    c = coef[p, h]
                    if c != 0.0:
                        for k in range(m):
                            out[h, k] += c * phi[k]
    finally:
        free(phi)


def sample_pool(uint64_t seed, Py_ssize_t block, Py_ssize_t n, int64_t[::1] out):
    """The first ``out.shape[0]`` entries of a uniform random permutation of range(n)
    (partial Fisher-Yates on stream SAMPLE_STREAM(block)): a subsample without replacement,
    in random order (so every prefix is a uniform subsample too)."""
    cdef Py_ssize_t k = out.shape[0], p, j
    cdef int64_t tmp
    cdef rng_state s
    if k > n:
        raise ValueError("cannot draw more rows than there are")
    cdef int64_t* perm = <int64_t*>malloc((n + 1) * sizeof(int64_t))
    if perm == NULL:
        raise MemoryError()
    try:
        with nogil:
            rng_init(&s, seed, sample_stream(block), 0)
            for p in range(n):
                perm[p] = p
            for p in range(k):
                j = p + <Py_ssize_t>rng_randint(&s, n - p)
                tmp = perm[p]
                perm[p] = perm[j]
                perm[j] = tmp
                out[p] = perm[p]
    finally:
        free(perm)
