"""Kernels of CGVR (Jin et al., paper 004): stochastic conjugate gradient with variance
reduction, and the paper's baselines (full-batch CG, SVRG with a fixed step).

Problem (one binary or single-output head)::

    f(x) = (1/n) sum_i s_i loss(X_i . w + b, y_i) + (alpha/2) ||w||^2 + (alpha_b/2) b^2

The iterate ``x`` has length ``d + 1``: ``x[:d] = w`` and ``x[d] = b`` (``x[d]`` stays 0 when the
model has no intercept, because every gradient coordinate ``d`` is then forced to 0).

The per-head tables (rows, targets, weights, loss, penalties, random stream) are bundled in a
:class:`HeadTables` and the inner-loop settings in a :class:`CGOptions`, both built once per
head.  Every line search works on margins: for a batch S with margins ``z = X_S x`` and
``q = X_S p``, ``phi(a) = sum_S s_i loss(z_i + a q_i) / |S| + reg(x + a p)`` and its derivative
cost O(|S|) per evaluation after one O(nnz(X_S)) pass.  All random draws come from the
counter-based generator of ``_random.pxd``.  The kernels run without bounds checks: the
Python entry points check every array length first.
"""
import numpy as np

from libc.math cimport fabs, sqrt, isfinite, exp, log1p
from libc.stdint cimport int32_t, int64_t, uint64_t

from ._dataset cimport (RowDataset, rows_t, rowvals_t, dataset_row, row_dot, row_axpy,
                        row_value, dense_dot, dense_axpy)
from ._loss cimport MarginLoss, LogLoss, sum_along_line
from ._random cimport rng_state, rng_init, rng_randint, rng_uniform

cdef enum:
    # beta rules
    BETA_PRP = 0      # PR+ (paper Option I, experiments)
    BETA_FR = 1       # Fletcher-Reeves (paper Option II, theory)
    BETA_PR = 2       # plain Polak-Ribiere
    BETA_HS = 3       # Hestenes-Stiefel
    BETA_DY = 4       # Dai-Yuan
    BETA_NONE = 5     # steepest descent on the VR gradient (beta = 0)
    # line-search objectives
    LS_BATCH = 0      # f_S, the paper's (11)-(12)
    LS_VR = 1         # f_S + (u - grad f_S(x0)) . x : its gradient is the VR gradient
    LS_FULL = 2       # f, on all n margins

BETA_RULES = {"PR+": BETA_PRP, "FR": BETA_FR, "PR": BETA_PR, "HS": BETA_HS, "DY": BETA_DY,
              "none": BETA_NONE}
LINE_SEARCHES = {"batch": LS_BATCH, "vr": LS_VR, "full": LS_FULL}

# indices of the statistics array filled by cgvr_inner
STAT_RESTARTS = 0         # direction reset to -g because it was not a descent direction
STAT_SKIPPED = 1          # no step taken (still not a descent direction, or no decrease found)
STAT_LS_EVALS = 2         # phi evaluations
STAT_WOLFE_FAIL = 3       # line search ended by its budget (best point returned)
STAT_BETA_RESET = 4       # beta rejected (non finite or denominator ~ 0)
N_STATS = 5



cdef extern from *:
    """
    #if defined(__GNUC__) && !defined(__clang__)
    /* functions and loops on cache-line boundaries: otherwise the place of the hot loops
       moves with every edit of this module (the unchanged dense full pass measured 4.5%
       slower after the inner-loop work of issue 21.3, and as fast as before with this) */
    #pragma GCC optimize ("align-functions=64", "align-loops=64")
    #endif
    /* <row, w> as 8 partial sums, lane l summing the columns j = l (mod 8) in column order,
       added in a fixed tree: the additions of one sum no longer wait on each other (a single
       sum is bound by the latency of the adds), and a dense row and its CSR form (sorted
       indices, zeros left out) give bitwise the same sum, on every machine */
    #define CG_LANES 8
    #define CG_TREE(s) (((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7])))
    #define CG_DOTS(T)                                                             \
        static inline double cg_dot_d##T(const CG_##T* v, const double* w, int n) {    \
            double s[CG_LANES] = {0.0};                                                \
            int k = 0, l;                                                              \
            for (; k + CG_LANES <= n; k += CG_LANES)                                   \
                for (l = 0; l < CG_LANES; l++) s[l] += (double)v[k + l] * w[k + l];   \
            for (l = 0; k < n; k++, l++) s[l] += (double)v[k] * w[k];                 \
            return CG_TREE(s);                                                         \
        }                                                                              \
        static inline double cg_dot_s##T(const CG_##T* v, const int* idx,              \
                                         const double* w, int n) {                     \
            double s[CG_LANES] = {0.0};                                                \
            int k;                                                                     \
            for (k = 0; k < n; k++) s[idx[k] & (CG_LANES - 1)] += (double)v[k] * w[idx[k]]; \
            return CG_TREE(s);                                                         \
        }                                                                              \
        /* <row, w> and <row, u> in one pass over the row, each as the functions above */ \
        static inline double cg_dot2_d##T(const CG_##T* v, const double* w,            \
                                          const double* u, int n, double* out_u) {      \
            double s[CG_LANES] = {0.0}, t[CG_LANES] = {0.0};                           \
            int k = 0, l;                                                              \
            for (; k + CG_LANES <= n; k += CG_LANES)                                   \
                for (l = 0; l < CG_LANES; l++) {                                       \
                    s[l] += (double)v[k + l] * w[k + l];                               \
                    t[l] += (double)v[k + l] * u[k + l];                               \
                }                                                                      \
            for (l = 0; k < n; k++, l++) {                                             \
                s[l] += (double)v[k] * w[k];                                           \
                t[l] += (double)v[k] * u[k];                                           \
            }                                                                          \
            *out_u = CG_TREE(t);                                                       \
            return CG_TREE(s);                                                         \
        }                                                                              \
        static inline double cg_dot2_s##T(const CG_##T* v, const int* idx,             \
                                          const double* w, const double* u, int n,     \
                                          double* out_u) {                             \
            double s[CG_LANES] = {0.0}, t[CG_LANES] = {0.0};                           \
            int k, j;                                                                  \
            for (k = 0; k < n; k++) {                                                  \
                j = idx[k];                                                            \
                s[j & (CG_LANES - 1)] += (double)v[k] * w[j];                          \
                t[j & (CG_LANES - 1)] += (double)v[k] * u[j];                          \
            }                                                                          \
            *out_u = CG_TREE(t);                                                       \
            return CG_TREE(s);                                                         \
        }
    /* the same sums along the direction -g + beta p (mode 1) or -g (mode 2), formed entry by
       entry as the row reads it (the sparse inner loop keeps its next direction pending,
       see _InnerTeam.lazy): bitwise the sums over a stored direction; w NULL: no w sum */
    #define CG_LAZY_LOOP(PJ)                                                           \
        for (k = 0; k < n; k++) {                                                      \
            j = idx[k];                                                                \
            if (w != NULL) s[j & (CG_LANES - 1)] += (double)v[k] * w[j];               \
            t[j & (CG_LANES - 1)] += (double)v[k] * (PJ);                              \
        }
    #define CG_LAZY(T)                                                                 \
        static inline double cg_dirdot_s##T(const CG_##T* v, const int* idx,           \
                                            const double* w, const double* g,          \
                                            const double* p, double beta, int mode,    \
                                            int n, double* out_u) {                    \
            double s[CG_LANES] = {0.0}, t[CG_LANES] = {0.0};                           \
            int k, j;                                                                  \
            if (mode == 1) { CG_LAZY_LOOP(-g[j] + beta * p[j]) }                       \
            else { CG_LAZY_LOOP(-g[j]) }                                               \
            *out_u = CG_TREE(t);                                                       \
            return CG_TREE(s);                                                         \
        }
    typedef double CG_64;
    typedef float CG_32;
    CG_DOTS(64)
    CG_DOTS(32)
    CG_LAZY(64)
    CG_LAZY(32)
    /* the one sweep of the sparse inner loop over features lo..hi-1 (see _InnerTeam.lazy):
       p_t formed (mode as above, 0: stored), x += a p_t, g_{t+1} = base + alpha x + acc, acc
       zeroed, p_t and g_{t+1} stored, and
       o = (g'.g', g'.g, p.g', p.g, x.g', base.g', x.p, p.p, base.p) with g' = g_{t+1},
       p = p_t, x = x_{t+1} (p.g only when want_pg).  Each sum runs in two lanes (even and
       odd j from lo; an odd last j goes to the even lane), added at the end: SSE2 does
       both lanes in one instruction, and the portable code gives the same bits */
    #if defined(__SSE2__)
    #include <emmintrin.h>
    /* the nine sums of o for two features (both lanes) */
    #define CG_SWEEP_SUMS_SIMD                                                         \
        S[0] = _mm_add_pd(S[0], _mm_mul_pd(GN, GN));                                   \
        S[1] = _mm_add_pd(S[1], _mm_mul_pd(GN, G));                                    \
        S[2] = _mm_add_pd(S[2], _mm_mul_pd(PJv, GN));                                  \
        if (want_pg) S[3] = _mm_add_pd(S[3], _mm_mul_pd(PJv, G));                      \
        S[4] = _mm_add_pd(S[4], _mm_mul_pd(X, GN));                                    \
        S[5] = _mm_add_pd(S[5], _mm_mul_pd(BA, GN));                                   \
        S[6] = _mm_add_pd(S[6], _mm_mul_pd(X, PJv));                                   \
        S[7] = _mm_add_pd(S[7], _mm_mul_pd(PJv, PJv));                                 \
        S[8] = _mm_add_pd(S[8], _mm_mul_pd(BA, PJv));
    #define CG_SWEEP_SIMD(PJ)                                                          \
        for (; j + 1 < hi; j += 2) {                                                   \
            __m128d G = _mm_loadu_pd(g + j), P = _mm_loadu_pd(p + j), PJv, X, GN, BA;  \
            PJv = PJ; (void)P;                                                         \
            X = _mm_add_pd(_mm_loadu_pd(x + j), _mm_mul_pd(A, PJv));                   \
            _mm_storeu_pd(x + j, X);                                                   \
            BA = _mm_loadu_pd(base + j);                                               \
            GN = _mm_add_pd(_mm_add_pd(BA, _mm_mul_pd(AL, X)), _mm_loadu_pd(acc + j)); \
            _mm_storeu_pd(acc + j, _mm_setzero_pd());                                  \
            CG_SWEEP_SUMS_SIMD                                                         \
            _mm_storeu_pd(p + j, PJv);                                                 \
            _mm_storeu_pd(g + j, GN);                                                  \
        }
    #endif
    /* the nine sums of o for one feature in lane L (BJ: its base) */
    #define CG_SWEEP_SUMS(L, BJ)                                                       \
        s[0][L] += gn * gn; s[1][L] += gn * go; s[2][L] += pj * gn;                    \
        if (want_pg) s[3][L] += pj * go;                                               \
        s[4][L] += xj * gn; s[5][L] += (BJ) * gn; s[6][L] += xj * pj;                  \
        s[7][L] += pj * pj; s[8][L] += (BJ) * pj;
    #define CG_SWEEP_TERM(L, J, PJ)                                                    \
        pj = PJ; xj = x[J] + a * pj; x[J] = xj;                                        \
        gn = base[J] + alpha * xj + acc[J]; acc[J] = 0.0; go = g[J];                   \
        CG_SWEEP_SUMS(L, base[J]) p[J] = pj; g[J] = gn;
    static void cg_lazy_sweep(double* x, double* p, double* g, double* acc,
                              const double* base, double alpha, double a, double beta,
                              int mode, int want_pg, long lo, long hi, double* o) {
        double s[9][2];
        double pj, xj, gn, go;
        long j = lo;
        int k;
    #if defined(__SSE2__)
        __m128d S[9], A = _mm_set1_pd(a), AL = _mm_set1_pd(alpha), B = _mm_set1_pd(beta);
        __m128d NEG = _mm_set1_pd(-0.0);
        for (k = 0; k < 9; k++) S[k] = _mm_setzero_pd();
        if (mode == 1) { CG_SWEEP_SIMD(_mm_add_pd(_mm_xor_pd(G, NEG), _mm_mul_pd(B, P))) }
        else if (mode == 2) { CG_SWEEP_SIMD(_mm_xor_pd(G, NEG)) }
        else { CG_SWEEP_SIMD(P) }
        for (k = 0; k < 9; k++) _mm_storeu_pd(s[k], S[k]);
    #else
        for (k = 0; k < 9; k++) s[k][0] = s[k][1] = 0.0;
        for (; j + 1 < hi; j += 2) {
            if (mode == 1) {
                CG_SWEEP_TERM(0, j, -g[j] + beta * p[j])
                CG_SWEEP_TERM(1, j + 1, -g[j + 1] + beta * p[j + 1])
            } else if (mode == 2) {
                CG_SWEEP_TERM(0, j, -g[j])
                CG_SWEEP_TERM(1, j + 1, -g[j + 1])
            } else {
                CG_SWEEP_TERM(0, j, p[j])
                CG_SWEEP_TERM(1, j + 1, p[j + 1])
            }
        }
    #endif
        if (j < hi) {
            if (mode == 1) { CG_SWEEP_TERM(0, j, -g[j] + beta * p[j]) }
            else if (mode == 2) { CG_SWEEP_TERM(0, j, -g[j]) }
            else { CG_SWEEP_TERM(0, j, p[j]) }
        }
        for (k = 0; k < 9; k++) o[k] = s[k][0] + s[k][1];
    }
    /* CSR rows: the features' x, g, p and base packed two by two, features 2m and 2m + 1
       in one 64-byte line as (x, x', g, g', p, p', base, base'): a margin reads one line
       per entry instead of three, and a line the sweep of its owner rewrites is shared
       with the other threads of a team once instead of three times.  The same sums as
       cg_dirdot and cg_lazy_sweep, in the same order: the same bits */
    #define CG_WLOOP(PJ)                                                               \
        for (k = 0; k < n; k++) {                                                      \
            j = idx[k];                                                                \
            c = W + 8 * (j >> 1) + (j & 1);                                            \
            if (want_z) s[j & (CG_LANES - 1)] += (double)v[k] * c[0];                  \
            t[j & (CG_LANES - 1)] += (double)v[k] * (PJ);                              \
        }
    #define CG_WDOT(T)                                                                 \
        static inline double cg_wdot_s##T(const CG_##T* v, const int* idx,             \
                                          const double* W, double beta, int mode,      \
                                          int want_z, int n, double* out_u) {          \
            double s[CG_LANES] = {0.0}, t[CG_LANES] = {0.0};                           \
            const double* c;                                                           \
            int k, j;                                                                  \
            if (mode == 1) { CG_WLOOP(-c[2] + beta * c[4]) }                           \
            else if (mode == 2) { CG_WLOOP(-c[2]) }                                    \
            else { CG_WLOOP(c[4]) }                                                    \
            *out_u = CG_TREE(t);                                                       \
            return CG_TREE(s);                                                         \
        }
    /* cg_wdot of each block's entries of one row (sorted indices, from its first entry in
       block 0 of edge[0..nblk]): out[2 i] the x sum and out[2 i + 1] the direction sum of
       block i (out stride 2 b); returns the position after the last entry read */
    #define CG_WSEG_LOOP(PJ)                                                           \
        for (; k < n && (j = idx[k]) < hi; k++) {                                      \
            c = W + 8 * (j >> 1) + (j & 1);                                            \
            if (want_z) s[j & (CG_LANES - 1)] += (double)v[k] * c[0];                  \
            t[j & (CG_LANES - 1)] += (double)v[k] * (PJ);                              \
            if (want_r) r[j & (CG_LANES - 1)] += (double)v[k] * (-c[2]);               \
        }
    #define CG_WSEGS(T)                                                                \
        static inline int cg_wsegs_s##T(const CG_##T* v, const int* idx, int k, int n, \
                                        const double* W, double beta, int mode,        \
                                        int want_z, int want_r, const int* edge,       \
                                        int nblk,                                      \
                                        double* out, long stride) {                    \
            const double* c;                                                           \
            int i, j, l, hi;                                                           \
            for (i = 0; i < nblk; i++, out += stride) {                                \
                double s[CG_LANES], t[CG_LANES], r[CG_LANES];                          \
                hi = edge[i + 1];                                                      \
                if (k >= n || idx[k] >= hi) {                                          \
                    out[0] = 0.0; out[1] = 0.0; out[2] = 0.0; continue;                \
                }                                                                      \
                for (l = 0; l < CG_LANES; l++) { s[l] = 0.0; t[l] = 0.0; r[l] = 0.0; } \
                if (mode == 1) { CG_WSEG_LOOP(-c[2] + beta * c[4]) }                   \
                else if (mode == 2) { CG_WSEG_LOOP(-c[2]) }                            \
                else { CG_WSEG_LOOP(c[4]) }                                            \
                out[0] = CG_TREE(s);                                                   \
                out[1] = CG_TREE(t);                                                   \
                out[2] = CG_TREE(r);                                                   \
            }                                                                          \
            return k;                                                                  \
        }
    CG_WDOT(64)
    CG_WDOT(32)
    CG_WSEGS(64)
    CG_WSEGS(32)
    #if defined(__SSE2__)
    #define CG_WSWEEP_SIMD(PJ)                                                         \
        for (; j + 1 < hi; j += 2) {                                                   \
            double* c = W + 4 * j;                                                     \
            __m128d G = _mm_load_pd(c + 2), P = _mm_load_pd(c + 4), PJv, X, GN, BA;    \
            PJv = PJ; (void)P;                                                         \
            X = _mm_add_pd(_mm_load_pd(c), _mm_mul_pd(A, PJv));                        \
            BA = _mm_load_pd(c + 6);                                                   \
            GN = _mm_add_pd(_mm_add_pd(BA, _mm_mul_pd(AL, X)), _mm_loadu_pd(acc + j)); \
            _mm_storeu_pd(acc + j, _mm_setzero_pd());                                  \
            CG_SWEEP_SUMS_SIMD                                                         \
            _mm_store_pd(c, X);                                                        \
            _mm_store_pd(c + 2, GN);                                                   \
            _mm_store_pd(c + 4, PJv);                                                  \
        }
    #endif
    #define CG_WSWEEP_TERM(L, c, J, PJ)                                                \
        pj = PJ; xj = c[0] + a * pj; c[0] = xj;                                        \
        gn = c[6] + alpha * xj + acc[J]; acc[J] = 0.0; go = c[2];                      \
        CG_SWEEP_SUMS(L, c[6]) c[4] = pj; c[2] = gn;
    #define CG_WSWEEP_PAIR(PJ0, PJ1)                                                   \
        { double* c0 = W + 4 * j; double* c1 = c0 + 1;                                 \
          CG_WSWEEP_TERM(0, c0, j, PJ0) CG_WSWEEP_TERM(1, c1, j + 1, PJ1) }
    /* cg_lazy_sweep on the packed features (lo even) */
    static void cg_lazy_sweep_w(double* W, double* acc, double alpha, double a, double beta,
                                int mode, int want_pg, long lo, long hi, double* o) {
        double s[9][2];
        double pj, xj, gn, go;
        double* c;
        long j = lo;
        int k;
    #if defined(__SSE2__)
        __m128d S[9], A = _mm_set1_pd(a), AL = _mm_set1_pd(alpha), B = _mm_set1_pd(beta);
        __m128d NEG = _mm_set1_pd(-0.0);
        for (k = 0; k < 9; k++) S[k] = _mm_setzero_pd();
        if (mode == 1) { CG_WSWEEP_SIMD(_mm_add_pd(_mm_xor_pd(G, NEG), _mm_mul_pd(B, P))) }
        else if (mode == 2) { CG_WSWEEP_SIMD(_mm_xor_pd(G, NEG)) }
        else { CG_WSWEEP_SIMD(P) }
        for (k = 0; k < 9; k++) _mm_storeu_pd(s[k], S[k]);
    #else
        for (k = 0; k < 9; k++) s[k][0] = s[k][1] = 0.0;
        for (; j + 1 < hi; j += 2) {
            if (mode == 1) CG_WSWEEP_PAIR(-c0[2] + beta * c0[4], -c1[2] + beta * c1[4])
            else if (mode == 2) CG_WSWEEP_PAIR(-c0[2], -c1[2])
            else CG_WSWEEP_PAIR(c0[4], c1[4])
        }
    #endif
        if (j < hi) {
            c = W + 4 * j;
            if (mode == 1) { CG_WSWEEP_TERM(0, c, j, -c[2] + beta * c[4]) }
            else if (mode == 2) { CG_WSWEEP_TERM(0, c, j, -c[2]) }
            else { CG_WSWEEP_TERM(0, c, j, c[4]) }
        }
        for (k = 0; k < 9; k++) o[k] = s[k][0] + s[k][1];
    }
    #if defined(__GNUC__) || defined(__clang__)
    static inline void cg_prefetch(const void* p, long bytes) {
        const char* c = (const char*)p;
        long o;
        for (o = 0; o < bytes; o += 64) __builtin_prefetch(c + o, 0, 3);
    }
    #else
    static inline void cg_prefetch(const void* p, long bytes) { (void)p; (void)bytes; }
    #endif
    """
    void cg_prefetch(const void* p, long bytes) noexcept nogil
    double cg_wdot_s64(const double* v, const int32_t* idx, const double* W, double beta,
                       int mode, int want_z, int n, double* out_u) noexcept nogil
    double cg_wdot_s32(const float* v, const int32_t* idx, const double* W, double beta,
                       int mode, int want_z, int n, double* out_u) noexcept nogil
    int cg_wsegs_s64(const double* v, const int32_t* idx, int k, int n, const double* W,
                     double beta, int mode, int want_z, int want_r, const int32_t* edge,
                     int nblk,
                     double* out, long stride) noexcept nogil
    int cg_wsegs_s32(const float* v, const int32_t* idx, int k, int n, const double* W,
                     double beta, int mode, int want_z, int want_r, const int32_t* edge,
                     int nblk,
                     double* out, long stride) noexcept nogil
    void cg_lazy_sweep_w(double* W, double* acc, double alpha, double a, double beta,
                         int mode, int want_pg, long lo, long hi, double* o) noexcept nogil
    void cg_lazy_sweep(double* x, double* p, double* g, double* acc, const double* base,
                       double alpha, double a, double beta, int mode, int want_pg, long lo,
                       long hi, double* o) noexcept nogil
    double cg_dot_d64(const double* v, const double* w, int n) noexcept nogil
    double cg_dot_d32(const float* v, const double* w, int n) noexcept nogil
    double cg_dot_s64(const double* v, const int32_t* idx, const double* w, int n) noexcept nogil
    double cg_dot_s32(const float* v, const int32_t* idx, const double* w, int n) noexcept nogil
    double cg_dot2_d64(const double* v, const double* w, const double* u, int n,
                       double* out_u) noexcept nogil
    double cg_dot2_d32(const float* v, const double* w, const double* u, int n,
                       double* out_u) noexcept nogil
    double cg_dot2_s64(const double* v, const int32_t* idx, const double* w, const double* u,
                       int n, double* out_u) noexcept nogil
    double cg_dot2_s32(const float* v, const int32_t* idx, const double* w, const double* u,
                       int n, double* out_u) noexcept nogil
    double cg_dirdot_s64(const double* v, const int32_t* idx, const double* w, const double* g,
                         const double* p, double beta, int mode, int n,
                         double* out_u) noexcept nogil
    double cg_dirdot_s32(const float* v, const int32_t* idx, const double* w, const double* g,
                         const double* p, double beta, int mode, int n,
                         double* out_u) noexcept nogil


cdef inline double fast_dot(rowvals_t data, const int32_t* indices, int nnz,
                            const double* w) noexcept nogil:
    """<row, w> in 8 lanes (see cg_dot_*): every margin of the kernels below."""
    if indices == NULL:
        if data.f32 != NULL:
            return cg_dot_d32(data.f32, w, nnz)
        return cg_dot_d64(data.f64, w, nnz)
    if data.f32 != NULL:
        return cg_dot_s32(data.f32, indices, w, nnz)
    return cg_dot_s64(data.f64, indices, w, nnz)


# sampled rows read ahead by the inner loop (random rows miss every cache level)
cdef enum:
    PREFETCH_ROWS = 4
    CM_AHEAD = 8        # column_margins: its thread's work per row is a part of the row


cdef inline double fast_dot2(rowvals_t data, const int32_t* indices, int nnz, const double* w,
                             const double* u, double* out_u) noexcept nogil:
    """``fast_dot(row, w)``, and ``fast_dot(row, u)`` to out_u, in one pass over the row."""
    if indices == NULL:
        if data.f32 != NULL:
            return cg_dot2_d32(data.f32, w, u, nnz, out_u)
        return cg_dot2_d64(data.f64, w, u, nnz, out_u)
    if data.f32 != NULL:
        return cg_dot2_s32(data.f32, indices, w, u, nnz, out_u)
    return cg_dot2_s64(data.f64, indices, w, u, nnz, out_u)


cdef inline void prefetch_row(const rows_t* X, Py_ssize_t i) noexcept nogil:
    """Ask the cache for row i's values (and indices) before they are read."""
    cdef int64_t start, nnz
    if X.indptr == NULL:
        if X.data32 != NULL:
            cg_prefetch(X.data32 + i * X.n_features, 4 * X.n_features)
        else:
            cg_prefetch(X.data + i * X.n_features, 8 * X.n_features)
        return
    start = X.indptr[i]
    nnz = X.indptr[i + 1] - start
    cg_prefetch(X.indices + start, 4 * nnz)
    if X.data32 != NULL:
        cg_prefetch(X.data32 + start, 4 * nnz)
    else:
        cg_prefetch(X.data + start, 8 * nnz)


cdef _check_length(str name, Py_ssize_t got, Py_ssize_t expected):
    if got != expected:
        raise ValueError(f"{name} has length {got}, expected {expected}")


# barriers, start gates and clocks of the thread teams (full passes, inner loops)
cdef extern from *:
    """
    #if defined(_MSC_VER)
    #include <windows.h>
    typedef volatile long team_atom_t;
    static __inline long team_inc(team_atom_t* p) { return InterlockedIncrement(p); }
    static __inline long team_load(team_atom_t* p) { return InterlockedCompareExchange(p, 0, 0); }
    static __inline void team_store(team_atom_t* p, long v) { InterlockedExchange(p, v); }
    static __inline void team_relax(void) { YieldProcessor(); }
    static __inline void team_yield(void) { SwitchToThread(); }
    static __inline int team_cpu(void) { return (int)GetCurrentProcessorNumber(); }
    static __inline void team_leave_core(int cpu) { (void)cpu; }
    static __inline double team_wall(void) {
        LARGE_INTEGER c, f; QueryPerformanceCounter(&c); QueryPerformanceFrequency(&f);
        return (double)c.QuadPart / (double)f.QuadPart;
    }
    static __inline double team_now(void) {
        LARGE_INTEGER c, f; QueryPerformanceCounter(&c); QueryPerformanceFrequency(&f);
        return (double)c.QuadPart / (double)f.QuadPart;
    }
    #else
    #include <sched.h>
    #include <time.h>
    typedef volatile long team_atom_t;
    static inline long team_inc(team_atom_t* p) { return __atomic_add_fetch(p, 1, __ATOMIC_ACQ_REL); }
    static inline long team_load(team_atom_t* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
    static inline void team_store(team_atom_t* p, long v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }
    static inline void team_relax(void) {
    #if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
    #endif
    }
    static inline void team_yield(void) { sched_yield(); }
    #if defined(__linux__)
    static inline int team_cpu(void) { return sched_getcpu(); }
    /* move the calling thread off core cpu: allowed everywhere else for a moment (the kernel
       migrates it before returning), then its own affinity again (it stays where it is) */
    static void team_leave_core(int cpu) {
        cpu_set_t mine, others;
        if (cpu < 0 || sched_getaffinity(0, sizeof(mine), &mine) != 0) return;
        others = mine;
        CPU_CLR(cpu, &others);
        if (CPU_COUNT(&others) == 0) return;
        if (sched_setaffinity(0, sizeof(others), &others) == 0)
            sched_setaffinity(0, sizeof(mine), &mine);
    }
    #else
    static inline int team_cpu(void) { return -1; }
    static inline void team_leave_core(int cpu) { (void)cpu; }
    #endif
    static inline double team_wall(void) {
        struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t);
        return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
    }
    static inline double team_now(void) {
        struct timespec t; clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
        return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
    }
    #endif
    /* a waiting thread spins for TEAM_SPIN_SECONDS, then yields its core at every check: a
       yield hands the core to any other runnable task for a whole time slice (milliseconds),
       so yielding within the ordinary skew of a team (microseconds) would turn each
       barrier on a busy machine into a time slice; *since is the start of the long wait */
    #define TEAM_SPIN_SECONDS 2e-4
    static inline void team_pause(int spins, double* since) {
        if (spins < 256) { team_relax(); return; }
        if (*since == 0.0) *since = team_wall();
        if (team_wall() - *since < TEAM_SPIN_SECONDS) team_relax(); else team_yield();
    }
    /* sense-reversing barrier; each thread notes the core it arrived on: a waiting thread
       that shares its core with a teammate yields at once (spinning would only delay the
       teammate it waits for, which the scheduler placed on the same core) */
    #define TEAM_THREADS 8
    typedef struct {
        team_atom_t count; team_atom_t sense; long n; volatile int cpu[TEAM_THREADS];
    } team_barrier_t;
    static void team_barrier_init(team_barrier_t* b, long n) {
        int k;
        b->count = 0; b->sense = 0; b->n = n;
        for (k = 0; k < TEAM_THREADS; k++) b->cpu[k] = -1;
    }
    static int team_shares_core(team_barrier_t* b, int tid, int cpu) {
        int k;
        if (cpu < 0) return 0;
        for (k = 0; k < b->n; k++)
            if (k != tid && b->cpu[k] == cpu) return 1;
        return 0;
    }
    static void team_barrier_wait(team_barrier_t* b, int* local_sense, int tid) {
        long s = 1 - *local_sense;
        int spins = 0, cpu = team_cpu();
        double since = 0.0;
        *local_sense = (int)s;
        b->cpu[tid] = cpu;
        if (team_inc(&b->count) == b->n) {
            team_store(&b->count, 0);
            team_store(&b->sense, s);
            return;
        }
        while (team_load(&b->sense) != s) {
            if ((++spins & 31) == 0 && team_shares_core(b, tid, cpu)) {
                team_yield();
                b->cpu[tid] = cpu = team_cpu();
            } else {
                team_pause(spins, &since);
            }
        }
    }
    /* start gate: the workers check in and wait; the caller opens the gate (1) when all
       checked in within the timeout, else closes it (-1) and the team runs without them.
       A worker that the scheduler woke on the caller's core leaves it: on the 2-core test
       VM a third of the inner loops' workers started there and stayed 1-3 ms (the idle
       core did not pull them sooner), while the caller waited at every barrier */
    typedef struct { team_atom_t started; team_atom_t go; volatile int caller_cpu; } team_gate_t;
    static void team_gate_init(team_gate_t* g) { g->started = 0; g->go = 0; g->caller_cpu = -1; }
    static long team_gate_checkin(team_gate_t* g) {
        int spins = 0;
        double since = 0.0;
        long go;
        team_inc(&g->started);
        while ((go = team_load(&g->go)) == 0) team_pause(++spins, &since);
        if (go == 1 && g->caller_cpu >= 0 && team_cpu() == g->caller_cpu)
            team_leave_core(g->caller_cpu);
        return go;
    }
    static long team_gate_open(team_gate_t* g, long n_workers, double timeout) {
        double end = team_wall() + timeout, since = 0.0;
        int spins = 0;
        while (team_load(&g->started) < n_workers) {
            if (team_wall() > end) { team_store(&g->go, -1); return 0; }
            team_pause(++spins, &since);
        }
        g->caller_cpu = team_cpu();
        team_store(&g->go, 1);
        return 1;
    }
    /* a full pass on a team: every thread claims the next block (then the next column
       chunk) until none is left; which thread runs a block does not change its sums */
    typedef struct {
        team_atom_t next_block; team_atom_t done_blocks;
        team_atom_t next_chunk; team_atom_t done_chunks;
    } pass_team_t;
    static void pass_team_init(pass_team_t* t) {
        t->next_block = 0; t->done_blocks = 0; t->next_chunk = 0; t->done_chunks = 0;
    }
    static inline long pass_claim(team_atom_t* c) { return team_inc(c) - 1; }
    static inline void pass_done(team_atom_t* c) { team_inc(c); }
    static void pass_wait(team_atom_t* c, long n) {
        int spins = 0;
        double since = 0.0;
        while (team_load(c) < n) team_pause(++spins, &since);
    }
    """
    ctypedef struct team_barrier_t:
        long n
    void team_barrier_init(team_barrier_t* b, long n) noexcept nogil
    void team_barrier_wait(team_barrier_t* b, int* local_sense, int tid) noexcept nogil
    ctypedef struct team_gate_t:
        long go
    void team_gate_init(team_gate_t* g) noexcept nogil
    long team_gate_checkin(team_gate_t* g) noexcept nogil
    long team_gate_open(team_gate_t* g, long n_workers, double timeout) noexcept nogil
    double team_now() noexcept nogil
    double team_wall() noexcept nogil
    int team_cpu() noexcept nogil
    void team_leave_core(int cpu) noexcept nogil
    ctypedef long team_atom_t
    ctypedef struct pass_team_t:
        team_atom_t next_block
        team_atom_t done_blocks
        team_atom_t next_chunk
        team_atom_t done_chunks
    void pass_team_init(pass_team_t* t) noexcept nogil
    long pass_claim(team_atom_t* c) noexcept nogil
    void pass_done(team_atom_t* c) noexcept nogil
    void pass_wait(team_atom_t* c, long n) noexcept nogil


# ---------------------------------------------------------------------------------------------
# per-head tables and inner-loop settings


cdef class HeadTables:
    """What the kernels read about one head, built once per head.

    Parameters
    ----------
    ds : RowDataset
        The rows of X (CSR: sorted column indices in every row, as ``make_dataset`` makes
        them; the inner loop's margins split each row by feature blocks).
    y, sample_weight : ndarray of float64 of shape (n_samples,)
        Targets and per-sample weights ``s_i``.
    loss : MarginLoss
    alpha, alpha_b : float
        L2 penalties of w and of the intercept b.
    fit_intercept : bool
        False keeps the gradient coordinate of b at 0.
    seed, stream : int
        The head's stream of the counter-based generator (mini-batches, Option II).
    """

    cdef RowDataset ds
    cdef const double[::1] y
    cdef const double[::1] sw
    cdef object sw_n              # s_i / n, made on first use (line searches on f itself)
    cdef MarginLoss loss
    cdef bint logistic            # loss is LogLoss (see log_loss_d)
    cdef double alpha, alpha_b
    cdef bint fit_intercept
    cdef uint64_t seed, stream
    # full passes over fixed row blocks (see n_blocks), reduced in block order
    cdef readonly Py_ssize_t n_blocks
    cdef double[:, ::1] parts     # per block: the loss part of the gradient (length d + 1)
    cdef Py_ssize_t stride        # of parts: d + 1 rounded up, plus a 64-byte gap, so that
                                  # threads on adjacent blocks never write one cache line
    cdef double[:, ::1] sums      # per block: sum s_i loss_i and the intercept gradient
    cdef object executor
    cdef readonly int n_threads   # threads of the executor (1 without one)
    cdef public int solo_calls    # inner loops to run without a team (it waited too long)
    cdef readonly double wait_share  # of the last team's caller: wall time waited at barriers
    cdef readonly int bailed_at      # step at which the last team's caller went on alone, or -1
    cdef const double* cur_x      # arrays of the pass in progress (read by _block)
    cdef double* cur_dl
    cdef double* cur_z
    cdef double* cur_grad
    cdef pass_team_t team         # the pass in progress on the executor's threads
    cdef Py_ssize_t team_chunks   # its column chunks (0: the columns are summed after it)

    def __init__(self, RowDataset ds, const double[::1] y, const double[::1] sample_weight,
                 MarginLoss loss, double alpha, double alpha_b, bint fit_intercept,
                 uint64_t seed=0, uint64_t stream=0):
        cdef Py_ssize_t n = ds.rows.n_samples
        if n < 1:
            raise ValueError("the dataset has no rows")
        _check_length("y", y.shape[0], n)
        _check_length("sample_weight", sample_weight.shape[0], n)
        self.ds, self.y, self.sw, self.loss = ds, y, sample_weight, loss
        self.logistic = type(loss) is LogLoss
        self.alpha, self.alpha_b, self.fit_intercept = alpha, alpha_b, fit_intercept
        self.seed, self.stream = seed, stream
        self.n_blocks = n_blocks(n)
        self.stride = (ds.rows.n_features + 8) // 8 * 8 + 8
        self.parts = np.zeros((self.n_blocks, self.stride))
        self.sums = np.zeros((self.n_blocks, 2))
        self.executor = None
        self.n_threads = 1
        self.bailed_at = -1

    def set_executor(self, executor, n_threads=None):
        """Run the blocks of the full passes in ``executor`` (a ``ThreadPoolExecutor``; None:
        in the calling thread) and the inner loops of ``cgvr_inner`` on a team of
        ``n_threads`` threads (the caller's and ``n_threads - 1`` of the executor, which must
        have that many idle workers; None: its ``max_workers``).  The blocks and their
        reduction order do not depend on it, so the results are bitwise the same."""
        self.executor = executor
        if executor is None:
            self.n_threads = 1
        else:
            self.n_threads = max(1, int(n_threads if n_threads is not None
                                        else executor._max_workers))

    @property
    def full_weights(self):
        """``s_i / n``, the weights of a line search on f itself."""
        if self.sw_n is None:
            self.sw_n = np.asarray(self.sw) / self.ds.rows.n_samples
        return self.sw_n

    def objective_gradient(self, const double[::1] x, double[::1] grad, double[::1] dl,
                           double[::1] z=None):
        """f(x) in one nogil pass; writes grad f(x) (length d + 1), loss'(X_i x, y_i)
        (length n) and, when ``z`` is given, the margins X_i x (length n)."""
        cdef Py_ssize_t n = self.ds.rows.n_samples, D = self.ds.rows.n_features + 1
        _check_length("x", x.shape[0], D)
        _check_length("grad", grad.shape[0], D)
        _check_length("dl", dl.shape[0], n)
        if z is not None:
            _check_length("z", z.shape[0], n)
        cdef double obj
        cdef Py_ssize_t k
        self.cur_x, self.cur_dl = &x[0], &dl[0]
        self.cur_z = &z[0] if z is not None else NULL
        cdef double start = 0.0
        cdef Py_ssize_t d = D - 1
        # the column sums of the blocks' gradients (O(n_blocks d)) are split over threads
        # too when d is large; each column is summed in block order whatever the split
        cdef bint split = d >= 2 * REDUCE_COLUMNS
        self.cur_grad = &grad[0]
        if self.executor is None or self.n_blocks == 1:
            with nogil:
                if _profiling:
                    start = team_now()
                for k in range(self.n_blocks):
                    self._block(k)
                if split:
                    self._columns(0, 1)
                if _profiling:
                    _add_parallel(team_now() - start)
        else:
            # n_threads workers claim the blocks, then the column chunks (each column
            # summed in block order, whatever the chunks): one task per worker instead of
            # one per block and per chunk.  The caller waits: on a busy machine a team of
            # the caller and n_threads - 1 workers measured slower in fits (its worker got
            # the other core late, after the inner loop's team had used it)
            pass_team_init(&self.team)
            self.team_chunks = min(2 * self.n_threads, d // REDUCE_COLUMNS) if split else 0
            workers = [self.executor.submit(self._pass_worker)
                       for _ in range(min(self.n_threads, self.n_blocks))]
            for future in workers:
                future.result()
        with nogil:
            if not split:
                self._columns(0, 1)
            obj = reduce_blocks(&self.parts[0, 0], &self.sums[0, 0], self.n_blocks, n,
                                d, &x[0], self.alpha, self.alpha_b, self.fit_intercept,
                                &grad[0])
        return obj

    def _pass_worker(self):
        with nogil:
            self._pass_work()

    cdef void _pass_work(self) noexcept nogil:
        """One thread of a full pass on the executor: blocks, then column chunks, claimed
        one at a time until none is left."""
        cdef long k
        while True:
            k = pass_claim(&self.team.next_block)
            if k >= self.n_blocks:
                break
            self._block(k)
            pass_done(&self.team.done_blocks)
        if self.team_chunks == 0:
            return
        pass_wait(&self.team.done_blocks, self.n_blocks)
        while True:
            k = pass_claim(&self.team.next_chunk)
            if k >= self.team_chunks:
                break
            self._columns(k, self.team_chunks)
            pass_done(&self.team.done_chunks)

    cdef void _columns(self, Py_ssize_t c, Py_ssize_t n_chunks) noexcept nogil:
        """grad[j] = sum of the blocks' parts[:, j] in block order + alpha x[j], for the
        columns of chunk c of n_chunks."""
        cdef Py_ssize_t d = self.ds.rows.n_features, j, k
        cdef Py_ssize_t D = self.stride
        cdef const double* parts = &self.parts[0, 0]
        cdef double acc
        for j in range(c * d // n_chunks, (c + 1) * d // n_chunks):
            acc = 0.0
            for k in range(self.n_blocks):
                acc += parts[k * D + j]
            self.cur_grad[j] = acc + self.alpha * self.cur_x[j]

    cdef void _block(self, Py_ssize_t k) noexcept nogil:
        cdef Py_ssize_t n = self.ds.rows.n_samples, j
        cdef Py_ssize_t start = k * n // self.n_blocks, end = (k + 1) * n // self.n_blocks
        cdef double* part = &self.parts[k, 0]
        for j in range(self.ds.rows.n_features + 1):
            part[j] = 0.0
        block_pass(&self.ds.rows, start, end, &self.y[0], &self.sw[0], self.loss,
                   self.logistic, self.cur_x,
                   part, self.cur_dl, self.cur_z, &self.sums[k, 0])


cdef struct wolfe_t:
    double c1
    double c2
    double a_init
    int max_iter
    int zoom_iter


cdef class CGOptions:
    """Settings of the CGVR inner loop and of its strong-Wolfe line search, fixed for a fit.

    Parameters
    ----------
    inner_iter : int
        Inner steps m per outer iteration.
    beta : str
        A key of ``BETA_RULES``.
    line_search : str
        A key of ``LINE_SEARCHES``.
    c1, c2 : float
        Strong-Wolfe constants, ``0 < c1 < c2 < 1``.
    step_init : float
        First trial step of every line search.
    ls_max_iter, zoom_max_iter : int
        Budgets of the bracketing and zoom phases.
    option_two : bool
        Option II (w_{k+1} = a random inner iterate) instead of Option I (the last one).
    """

    cdef Py_ssize_t inner_iter
    cdef int beta_rule, ls_mode
    cdef wolfe_t wolfe
    cdef bint option_two

    def __init__(self, Py_ssize_t inner_iter=50, str beta="PR+", str line_search="vr",
                 double c1=1e-4, double c2=0.1, double step_init=1.0, int ls_max_iter=20,
                 int zoom_max_iter=20, bint option_two=False):
        if inner_iter < 1 or ls_max_iter < 1 or zoom_max_iter < 0:
            raise ValueError("inner_iter and ls_max_iter must be >= 1, zoom_max_iter >= 0")
        if beta not in BETA_RULES or line_search not in LINE_SEARCHES:
            raise ValueError(f"unknown beta rule {beta!r} or line search {line_search!r}")
        if not (0 < c1 < c2 < 1 and step_init > 0):
            raise ValueError("the line search needs 0 < c1 < c2 < 1 and step_init > 0")
        self.inner_iter = inner_iter
        self.beta_rule = BETA_RULES[beta]
        self.ls_mode = LINE_SEARCHES[line_search]
        self.wolfe = wolfe_t(c1, c2, step_init, ls_max_iter, zoom_max_iter)
        self.option_two = option_two


# ---------------------------------------------------------------------------------------------
# full pass


cdef inline double reg_dot(const double* a, const double* b, Py_ssize_t d, double alpha,
                           double alpha_b) noexcept nogil:
    """alpha a[:d].b[:d] + alpha_b a[d] b[d]."""
    return alpha * dense_dot(a, b, d) + alpha_b * a[d] * b[d]


# Rows per block of a full pass, and the most blocks: the partition depends on n only
# (never on the thread count), so a pass gives bitwise the same result for any n_jobs.
# Below 2 * BLOCK_ROWS rows there is one block (the sequential pass).
cdef enum:
    BLOCK_ROWS = 8192
    MAX_BLOCKS = 16
    REDUCE_COLUMNS = 4096     # fewest columns per thread of the blocks' column sums


cpdef Py_ssize_t n_blocks(Py_ssize_t n):
    """Number of fixed row blocks of a full pass over n rows."""
    cdef Py_ssize_t k = n // BLOCK_ROWS
    return 1 if k < 2 else (MAX_BLOCKS if k > MAX_BLOCKS else k)


cdef inline void block_pass(const rows_t* X, Py_ssize_t start, Py_ssize_t end, const double* y,
                            const double* sw, MarginLoss loss, bint logistic,
                            const double* x, double* part, double* dl, double* z,
                            double* sums) noexcept nogil:
    """Rows start..end-1 of a full pass: part += sum s_i loss'_i X_i / n (part zeroed by the
    caller), sums = (sum s_i loss_i, sum s_i loss'_i / n); dl_i = loss'(z_i, y_i), z_i = X_i x
    (logistic: loss is LogLoss, by log_loss_d)."""
    cdef Py_ssize_t d = X.n_features, i
    cdef rowvals_t data
    cdef const int32_t* indices
    cdef int nnz
    cdef double zi, total = 0.0, gb = 0.0, di, inv_n = 1.0 / X.n_samples
    for i in range(start, end):
        nnz = dataset_row(X, i, &data, &indices)
        zi = fast_dot(data, indices, nnz, x) + x[d]
        if logistic:
            total += sw[i] * log_loss_d(zi, y[i], &di)
        else:
            total += sw[i] * loss.loss(zi, y[i])
            di = loss.dloss(zi, y[i])
        dl[i] = di
        if z != NULL:
            z[i] = zi
        di *= sw[i] * inv_n
        if di != 0.0:
            row_axpy(di, data, indices, nnz, part)
            gb += di
    sums[0] = total
    sums[1] = gb


cdef inline double reduce_blocks(const double* parts, const double* sums, Py_ssize_t n_blk,
                                 Py_ssize_t n, Py_ssize_t d, const double* x, double alpha,
                                 double alpha_b, bint fit_intercept,
                                 double* grad) noexcept nogil:
    """Sum the blocks' scalars in block order, add the penalty: return f(x) and write
    grad[d] (the columns grad[:d] are summed by ``HeadTables._columns``)."""
    cdef Py_ssize_t k
    cdef double total = 0.0, gb = 0.0
    for k in range(n_blk):
        total += sums[2 * k]
        gb += sums[2 * k + 1]
    if fit_intercept:
        grad[d] = gb + alpha_b * x[d]
    else:
        grad[d] = 0.0
    return total * (1.0 / n) + 0.5 * reg_dot(x, x, d, alpha, alpha_b)


# ---------------------------------------------------------------------------------------------
# thread team of one inner loop: every thread runs the same inner loop; the O(batch) and
# O(d) work is split over FIXED blocks (their number depends on the sizes only, never on the
# thread count), each block's partial sums go to a shared buffer, and after a barrier every
# thread adds the partials in block order (the scalar logic is then replicated, identical in
# every thread).  So the result is bitwise the same for any number of threads.

cdef enum:
    TEAM_MAX = 8        # most blocks of a partition (and most threads of a team)
    TEAM_ROWS = 32      # fewest batch rows per block
    TEAM_COLS = 16      # fewest features per block
    RED_STRIDE = 104    # partials of one reduction: TEAM_MAX blocks x up to 13 values


cdef struct team_t:
    team_barrier_t bar
    team_gate_t gate
    double* red         # two reduction buffers of RED_STRIDE (used alternately)
    int n_threads
    int stop            # set by thread 0: the workers leave at the next step (see run)


cdef struct me_t:
    # one thread of a team
    team_t* team
    int tid
    int sense           # of the barrier
    int slot            # reductions done (selects the buffer)
    double mark         # profiling: start of the current parallel section
    double par          # profiling: seconds spent in parallel sections
    double wait         # wall seconds thread 0 waited at barriers
    double wait_cpu     # CPU seconds thread 0 spent at barriers while probing
    bint probing        # thread 0: until a probe window passed (see check_team)
    double win_wall     # thread 0: start of the current probe window (wall and CPU time,
    double win_cpu      # and ``wait`` then)
    double win_wait
    Py_ssize_t win_end  # step at whose end the window is judged
    int windows         # probe windows left


# the lazy sweep's p.p from its algebra is kept when above this share of the sum of its
# terms' sizes (g.g + beta^2 p.p), else summed from the stored direction (cancellation)
cdef double LAZY_CANCEL = 1e-6
# the inner loop keeps the next direction pending (see _InnerTeam.lazy); False: two eager
# sweeps per step (tests)
cdef bint LAZY_DIRECTION = True


def set_lazy_direction(bint on, cancel=None):
    """Let the inner loop keep its next direction pending (True, the default) or form it
    in a second sweep, and set LAZY_CANCEL (None: unchanged; inf: the scalars of every
    direction summed from the stored direction) (tests); returns the previous
    ``(on, cancel)``."""
    global LAZY_DIRECTION, LAZY_CANCEL
    old = (LAZY_DIRECTION, LAZY_CANCEL)
    LAZY_DIRECTION = on
    if cancel is not None:
        LAZY_CANCEL = cancel
    return old


# seconds the caller waits for the workers of a team to start before it runs alone
cdef double TEAM_START_TIMEOUT = 1.0
# share of its wall time the caller may wait at barriers before the team is set aside
# (for TEAM_SOLO_CALLS inner loops); with idle cores the waits are a few percent
cdef double TEAM_MAX_WAIT = 0.5
cdef int TEAM_SOLO_CALLS = 4
# steps after which the caller leaves a team it waited for more than TEAM_MAX_WAIT of the
# time (a team the scheduler put on one core, or whose workers lost their core) and runs
# the rest of the inner loop alone; the next inner loop tries a team again
cdef int TEAM_PROBE_STEPS = 5
# ... or, at the end of the probe, when it worked (CPU time outside barriers) less than this
# share of the wall time: with a teammate on its own core it works about 90% of the time
cdef double TEAM_MIN_WORK = 0.7
# probe windows of TEAM_PROBE_STEPS steps: a team leaves only when every one failed. A worker
# that the scheduler woke on the caller's core moves to the idle one about a millisecond
# later; on the idle 2-core test machine that made a third of the first windows fail (the
# caller waited 1.0-1.2 ms of 1.7-1.9) and those inner loops ran alone
cdef int TEAM_PROBE_WINDOWS = 2


def leave_core():
    """Move the calling thread off the core it runs on (tests); returns the cores before and
    after (-1 where the platform does not say)."""
    cdef int before = team_cpu()
    team_leave_core(before)
    return before, team_cpu()


def set_team_policy(double max_wait, int probe_steps, int probe_windows=2):
    """Set TEAM_MAX_WAIT, TEAM_PROBE_STEPS and TEAM_PROBE_WINDOWS (tests); returns the
    previous values."""
    global TEAM_MAX_WAIT, TEAM_PROBE_STEPS, TEAM_PROBE_WINDOWS
    old = (TEAM_MAX_WAIT, TEAM_PROBE_STEPS, TEAM_PROBE_WINDOWS)
    TEAM_MAX_WAIT, TEAM_PROBE_STEPS, TEAM_PROBE_WINDOWS = max_wait, probe_steps, probe_windows
    return old

# profiling (a team of one thread): CPU seconds of the parallel sections (block work of the
# inner loop and of the full passes), for the Amdahl ceiling of the threads report
cdef bint _profiling = False
cdef double _parallel_seconds = 0.0


def profile_parallel(bint on):
    """Start (True) or stop counting the CPU seconds spent in parallel sections (reset to 0
    when started); only fits with one thread are counted."""
    global _profiling, _parallel_seconds
    _profiling = on
    if on:
        _parallel_seconds = 0.0


def parallel_seconds():
    """CPU seconds spent in parallel sections since ``profile_parallel(True)``."""
    return _parallel_seconds


cdef inline Py_ssize_t team_blocks(Py_ssize_t m, Py_ssize_t per) noexcept nogil:
    """Number of fixed blocks of a range of m items (at least ``per`` items each)."""
    cdef Py_ssize_t k = m // per
    return 1 if k < 1 else (TEAM_MAX if k > TEAM_MAX else k)


cdef inline Py_ssize_t feature_edge(Py_ssize_t k, Py_ssize_t d, Py_ssize_t K) noexcept nogil:
    """First feature of block k of K (d at k = K): the inner edges are multiples of 8, so
    that threads owning adjacent blocks share no cache line of the gradient scatter (acc is
    64-byte aligned; blocks hold at least TEAM_COLS >= 16 features, so none is empty)."""
    if k >= K:
        return d
    return (k * d // K) & ~(<Py_ssize_t>7)


cdef inline Py_ssize_t first_block(const me_t* me, Py_ssize_t K) noexcept nogil:
    return me.tid * K // me.team.n_threads


cdef inline Py_ssize_t end_block(const me_t* me, Py_ssize_t K) noexcept nogil:
    return (me.tid + 1) * K // me.team.n_threads


cdef inline double* team_buf(const me_t* me) noexcept nogil:
    """Where this reduction's partials go (block k, value w at ``k * W + w``)."""
    return me.team.red + (me.slot & 1) * RED_STRIDE


cdef inline void team_begin(me_t* me) noexcept nogil:
    if _profiling:
        me.mark = team_now()


cdef void team_reduce(me_t* me, Py_ssize_t K, int W, double* out) noexcept nogil:
    """Wait for every thread, then out[w] = sum of the W-value partials of blocks 0..K-1 in
    block order.  Two buffers alternate: a buffer is rewritten only two reductions later,
    after a barrier every thread passed once it had read it."""
    cdef const double* buf = team_buf(me)
    cdef Py_ssize_t k
    cdef int w
    cdef double start, cpu = 0.0
    if _profiling:
        me.par += team_now() - me.mark
    if me.team.n_threads > 1:
        if me.tid == 0:
            start = team_wall()
            if me.probing:
                cpu = team_now()
            team_barrier_wait(&me.team.bar, &me.sense, me.tid)
            me.wait += team_wall() - start
            if me.probing:
                me.wait_cpu += team_now() - cpu
        else:
            team_barrier_wait(&me.team.bar, &me.sense, me.tid)
    for w in range(W):
        out[w] = 0.0
    for k in range(K):
        for w in range(W):
            out[w] += buf[k * W + w]
    me.slot += 1


# ---------------------------------------------------------------------------------------------
# line search along p on margins


cdef struct phi_t:
    # phi(a) = sum_k s_k loss(z_k + a q_k, y_k) + a r0 + a^2 rpp / 2 + a lin  (+ const)
    const double* z
    const double* q
    const double* y
    const double* s
    Py_ssize_t n
    double r0
    double rpp
    double lin
    me_t* me            # NULL: one sequential sum; else the sum over nblk fixed blocks
    Py_ssize_t nblk
    bint logistic       # the loss is LogLoss (see log_along_line)
    bint change         # the sum is of loss changes, phi(a) - phi(0) (see change_along_line)


cdef inline double log_loss_d(double p, double y, double* dl) noexcept nogil:
    """``LogLoss().loss(p, y)``, and its ``dloss(p, y)`` to dl, with one exp instead of
    two: both take the exp of the same argument, so the values are bitwise the same."""
    cdef double z = y * p, e
    if z > 0:
        e = exp(-z)
        dl[0] = -y * (e / (1.0 + e))
        return log1p(e)
    e = exp(z)
    dl[0] = -y * (1.0 / (1.0 + e))
    return -z + log1p(e)


cdef inline double log_along_line(const double* m, const double* dm, const double* y,
                                  const double* s, Py_ssize_t n, double t,
                                  double* d1) noexcept nogil:
    """``sum_along_line`` of ``LogLoss`` (value and first derivative) by ``log_loss_d``:
    the same sums."""
    cdef double value = 0.0, a1 = 0.0, li, di
    cdef Py_ssize_t i
    for i in range(n):
        li = log_loss_d(m[i] + t * dm[i], y[i], &di)
        value += s[i] * li
        a1 += s[i] * di * dm[i]
    d1[0] = a1
    return value


cdef inline double change_along_line(MarginLoss loss, const double* m, const double* dm,
                                     const double* y, const double* s, Py_ssize_t n,
                                     double t, double* d1) noexcept nogil:
    """``sum_i s_i (loss(m_i + t dm_i) - loss(m_i))`` from ``loss.loss_change``, and the
    derivative as ``sum_along_line``'s.  Near the optimum phi(a) - phi(0) is far below
    phi(0): summed as a difference of two sums over n rows it keeps only their rounding, and
    full-batch CG stalled at max |gradient| 3e-8 to 5e-8 on 500 rows."""
    cdef double value = 0.0, a1 = 0.0
    cdef Py_ssize_t i
    for i in range(n):
        value += s[i] * loss.loss_change(m[i], t * dm[i], y[i])
        a1 += s[i] * loss.dloss(m[i] + t * dm[i], y[i]) * dm[i]
    d1[0] = a1
    return value


cdef inline double line_sum(const phi_t* P, MarginLoss loss, Py_ssize_t lo, Py_ssize_t hi,
                            double a, double* d1) noexcept nogil:
    """Rows lo..hi-1 of P along the line at a: the loss sum (of changes from a = 0 with
    ``P.change``), its derivative to d1."""
    if P.change:
        return change_along_line(loss, P.z + lo, P.q + lo, P.y + lo, P.s + lo, hi - lo, a, d1)
    if P.logistic:
        return log_along_line(P.z + lo, P.q + lo, P.y + lo, P.s + lo, hi - lo, a, d1)
    return sum_along_line(loss, P.z + lo, P.q + lo, P.y + lo, P.s + lo, hi - lo, a, True, d1,
                          NULL)


cdef inline double phi_finish(const phi_t* P, double a, double v, double dv,
                              double* deriv) noexcept nogil:
    deriv[0] = dv + P.r0 + a * P.rpp + P.lin
    return v + a * (P.r0 + 0.5 * a * P.rpp + P.lin)


cdef inline void phi_partials(const phi_t* P, MarginLoss loss, double a, double* buf,
                              int W) noexcept nogil:
    """Sum along the line of this thread's blocks: buf[k * W] the value, buf[k * W + 1] the
    derivative of block k."""
    cdef Py_ssize_t k, lo, hi
    cdef double dv
    for k in range(first_block(P.me, P.nblk), end_block(P.me, P.nblk)):
        lo = k * P.n // P.nblk
        hi = (k + 1) * P.n // P.nblk
        buf[k * W] = line_sum(P, loss, lo, hi, a, &dv)
        buf[k * W + 1] = dv


cdef double phi_value(phi_t* P, MarginLoss loss, double a, double* deriv) noexcept nogil:
    cdef double dv, v
    cdef double out[2]
    if P.me == NULL:
        v = line_sum(P, loss, 0, P.n, a, &dv)
        return phi_finish(P, a, v, dv, deriv)
    team_begin(P.me)
    phi_partials(P, loss, a, team_buf(P.me), 2)
    team_reduce(P.me, P.nblk, 2, out)
    return phi_finish(P, a, out[0], out[1], deriv)


cdef double strong_wolfe(phi_t* P, MarginLoss loss, double phi0, double dphi0,
                         const wolfe_t* W, double a_max, int* n_evals,
                         int* failed) noexcept nogil:
    """Strong-Wolfe line search (Nocedal & Wright Alg. 3.5, zoom Alg. 3.6 with the paper's
    midpoint rule).  Expansion doubles the step up to ``a_max``.  If the budget runs out the
    step with the lowest phi seen is returned (0 if none decreased phi)."""
    cdef double c1 = W.c1, c2 = W.c2
    cdef double a_prev = 0.0, f_prev = phi0, d_prev = dphi0
    cdef double a = W.a_init, fa, da
    cdef double lo, hi, f_lo, d_lo, mid, fm, dm
    cdef double best_a = 0.0, best_f = phi0
    cdef int i, j
    failed[0] = 0
    if a > a_max:
        a = a_max
    for i in range(W.max_iter):
        fa = phi_value(P, loss, a, &da)
        n_evals[0] += 1
        if fa < best_f:
            best_f = fa
            best_a = a
        if (not isfinite(fa)) or fa > phi0 + c1 * a * dphi0 or (i > 0 and fa >= f_prev):
            lo = a_prev; f_lo = f_prev; d_lo = d_prev; hi = a
            break
        if fabs(da) <= -c2 * dphi0:
            return a
        if da >= 0:
            lo = a; f_lo = fa; d_lo = da; hi = a_prev
            break
        if a >= a_max:
            return a
        a_prev = a; f_prev = fa; d_prev = da
        a = 2.0 * a
        if a > a_max:
            a = a_max
    else:
        failed[0] = 1
        return best_a
    # zoom between lo (sufficient decrease holds, lowest phi so far) and hi
    for j in range(W.zoom_iter):
        mid = 0.5 * (lo + hi)
        fm = phi_value(P, loss, mid, &dm)
        n_evals[0] += 1
        if fm < best_f:
            best_f = fm
            best_a = mid
        if (not isfinite(fm)) or fm > phi0 + c1 * mid * dphi0 or fm >= f_lo:
            hi = mid
        else:
            if fabs(dm) <= -c2 * dphi0:
                return mid
            if dm * (hi - lo) >= 0:
                hi = lo
            lo = mid; f_lo = fm; d_lo = dm
    failed[0] = 1
    return best_a


def line_search_margins(CGOptions options, MarginLoss loss, const double[::1] z,
                        const double[::1] q, const double[::1] y, const double[::1] s,
                        double r0, double rpp, double lin, double a_max):
    """Strong-Wolfe step along a line given by margins (full-batch CG and the tests).

    ``phi(a) = sum_k s_k loss(z_k + a q_k, y_k) + a r0 + a^2 rpp / 2 + a lin``, searched with
    the constants and budgets of ``options`` and steps up to ``a_max``.  Returns
    ``(step, phi(0), phi'(0), n_evals, failed)``; step is 0 when ``phi'(0) >= 0``.
    """
    cdef Py_ssize_t n = z.shape[0]
    if n < 1:
        raise ValueError("the line needs at least one margin")
    _check_length("q", q.shape[0], n)
    _check_length("y", y.shape[0], n)
    _check_length("s", s.shape[0], n)
    cdef phi_t P = phi_t(&z[0], &q[0], &y[0], &s[0], n, r0, rpp, lin, NULL, 1,
                         type(loss) is LogLoss, False)
    cdef double phi0, dphi0, a = 0.0
    cdef int n_evals = 0, failed = 0
    with nogil:
        phi0 = phi_value(&P, loss, 0.0, &dphi0)
        if dphi0 < 0:
            # the search compares phi(a) - phi(0), summed as loss changes (change_along_line)
            P.change = True
            a = strong_wolfe(&P, loss, 0.0, dphi0, &options.wolfe, a_max, &n_evals, &failed)
    return a, phi0, dphi0, n_evals, bool(failed)


# ---------------------------------------------------------------------------------------------
# CGVR inner loop (Algorithm 3, one outer iteration)


cdef inline double beta_from_dots(int rule, double gg_new, double g_new_old, double gg_old,
                                  double p_new, double p_old, int* reset) noexcept nogil:
    """beta_{t+1} from the dot products of g_{t+1}, g_t and p_t (guards: non-finite or ~0
    denominators give 0)."""
    cdef double num, den, beta
    if rule == BETA_NONE:
        return 0.0
    if rule == BETA_FR:
        num = gg_new; den = gg_old
    elif rule == BETA_PR or rule == BETA_PRP:
        num = gg_new - g_new_old; den = gg_old
    elif rule == BETA_HS:
        num = gg_new - g_new_old; den = p_new - p_old
    else:  # DY
        num = gg_new; den = p_new - p_old
    if not (fabs(den) > 1e-300):
        reset[0] += 1
        return 0.0
    beta = num / den
    if not isfinite(beta):
        reset[0] += 1
        return 0.0
    if rule == BETA_PRP and beta < 0:
        return 0.0
    return beta


cdef inline void beta_dot_terms(double gn, double go, double pj, double* s) noexcept nogil:
    """Add coordinate j's terms of the beta rules' dot products g_{t+1}.g_{t+1},
    g_{t+1}.g_t, g_t.g_t, p_t.g_{t+1} and p_t.g_t (gn, go, pj its entries) to s[0..4]."""
    s[0] += gn * gn
    s[1] += gn * go
    s[2] += go * go
    s[3] += pj * gn
    s[4] += pj * go


cdef inline void restart_terms(double xj, double pj, double bj, double* s) noexcept nogil:
    """Add coordinate j's terms of x.p, p.p and base.p to s[0..2], as direction_scalars
    (pj = -g_j: the scalars of a restart's direction, summed before it is needed)."""
    s[0] += xj * pj
    s[1] += pj * pj
    s[2] += bj * pj


cdef inline void direction_scalars(const double* x, const double* p, const double* base,
                                   Py_ssize_t d, double* sc) noexcept nogil:
    """sc = (x[:d].p[:d], p[:d].p[:d], base[:d].p[:d]) in one sweep."""
    cdef Py_ssize_t j
    cdef double a0 = 0.0, a1 = 0.0, a2 = 0.0
    for j in range(d):
        a0 += x[j] * p[j]
        a1 += p[j] * p[j]
        a2 += base[j] * p[j]
    sc[0] = a0; sc[1] = a1; sc[2] = a2


cdef inline void scalar_partials(const double* x, const double* p, const double* base,
                                 Py_ssize_t d, Py_ssize_t K, Py_ssize_t k0, Py_ssize_t k1,
                                 double* buf) noexcept nogil:
    """Direction scalars (x.p, p.p, base.p over features j < d) of feature blocks k0..k1-1."""
    cdef Py_ssize_t k, lo
    for k in range(k0, k1):
        lo = feature_edge(k, d, K)
        direction_scalars(x + lo, p + lo, base + lo, feature_edge(k + 1, d, K) - lo,
                          buf + 3 * k)


# the direction p_t of the inner loop's step: stored in p, or (sparse rows, see
# _InnerTeam.lazy) pending, formed entry by entry from g_t and p_{t-1} where it is read
cdef enum:
    DIR_STORED = 0      # p
    DIR_LAZY = 1        # -g + beta p
    DIR_NEG_G = 2       # -g (a restart)


cdef struct dir_t:
    const double* g
    const double* p
    double beta
    int mode
    double* W           # CSR rows: the packed x, g, p, base of features j < d (else NULL)


cdef inline double* packed(double* W, Py_ssize_t j) noexcept nogil:
    """Feature j's entries in the packed layout: [0] x, [2] g, [4] p, [6] base."""
    return W + 8 * (j >> 1) + (j & 1)


cdef inline double dir_at_packed(const dir_t* D, Py_ssize_t j) noexcept nogil:
    """dir_at for a feature j < d of the packed layout."""
    cdef const double* c = packed(D.W, j)
    if D.mode == DIR_LAZY:
        return -c[2] + D.beta * c[4]
    if D.mode == DIR_NEG_G:
        return -c[2]
    return c[4]


cdef inline double dir_at(const dir_t* D, Py_ssize_t j) noexcept nogil:
    """Entry j of the direction (the same bits as the stored p_t of the eager sweeps)."""
    if D.mode == DIR_LAZY:
        return -D.g[j] + D.beta * D.p[j]
    if D.mode == DIR_NEG_G:
        return -D.g[j]
    return D.p[j]


cdef inline double dir_dot(rowvals_t data, const int32_t* indices, int nnz, const double* w,
                           const dir_t* D, double* out_q) noexcept nogil:
    """``fast_dot(row, w)`` (0 when w is NULL), and ``fast_dot(row, direction)`` to out_q,
    in one pass over the row; a pending direction needs CSR rows (indices not NULL)."""
    cdef double qk
    if D.W != NULL:
        if data.f32 != NULL:
            return cg_wdot_s32(data.f32, indices, D.W, D.beta, D.mode, w != NULL, nnz, out_q)
        return cg_wdot_s64(data.f64, indices, D.W, D.beta, D.mode, w != NULL, nnz, out_q)
    if D.mode == DIR_STORED:
        if w == NULL:
            out_q[0] = fast_dot(data, indices, nnz, D.p)
            return 0.0
        return fast_dot2(data, indices, nnz, w, D.p, out_q)
    if data.f32 != NULL:
        return cg_dirdot_s32(data.f32, indices, w, D.g, D.p, D.beta, D.mode, nnz, out_q)
    return cg_dirdot_s64(data.f64, indices, w, D.g, D.p, D.beta, D.mode, nnz, out_q)


cdef inline void block_sums(const double* part, Py_ssize_t kd, Py_ssize_t b, Py_ssize_t r0,
                            Py_ssize_t r1, bint want_z, double xd, double pd, double* z,
                            double* q, double rd, double* qr) noexcept nogil:
    """Margins of batch rows r0..r1-1 from the feature blocks' sums (block order); those
    along -g too when qr is not NULL (rd = -g[d])."""
    cdef Py_ssize_t k, i
    cdef double sz, sq, sr
    for k in range(r0, r1):
        sz = 0.0
        sq = 0.0
        sr = 0.0
        for i in range(kd):
            sz += part[3 * (i * b + k)]
            sq += part[3 * (i * b + k) + 1]
            sr += part[3 * (i * b + k) + 2]
        if want_z:
            z[k] = sz + xd
        q[k] = sq + pd
        if qr != NULL:
            qr[k] = sr + rd


cdef inline void batch_margins(const rows_t* X, const Py_ssize_t* idx, Py_ssize_t b,
                               const double* x, const dir_t* D, double* z, double* q,
                               bint want_z) noexcept nogil:
    cdef Py_ssize_t k, d = X.n_features
    cdef rowvals_t data
    cdef const int32_t* indices
    cdef int nnz
    cdef double qk, zk, pd = dir_at(D, d)
    if X.indptr != NULL:
        # the row pointers of the rows read ahead: a miss on them would stall the read-ahead
        for k in range(min(b, 2 * PREFETCH_ROWS)):
            cg_prefetch(X.indptr + idx[k], 16)
    for k in range(min(b, PREFETCH_ROWS)):
        prefetch_row(X, idx[k])
    for k in range(b):
        if X.indptr != NULL and k + 2 * PREFETCH_ROWS < b:
            cg_prefetch(X.indptr + idx[k + 2 * PREFETCH_ROWS], 16)
        if k + PREFETCH_ROWS < b:
            prefetch_row(X, idx[k + PREFETCH_ROWS])
        nnz = dataset_row(X, idx[k], &data, &indices)
        zk = dir_dot(data, indices, nnz, x if want_z else NULL, D, &qk)
        if want_z:
            z[k] = zk + x[d]
        q[k] = qk + pd


cdef inline void range_margins(const rows_t* X, const dir_t* D, double* q, Py_ssize_t start,
                               Py_ssize_t end) noexcept nogil:
    cdef Py_ssize_t i, d = X.n_features
    cdef rowvals_t data
    cdef const int32_t* indices
    cdef int nnz
    cdef double qi, pd = dir_at(D, d)
    for i in range(start, end):
        nnz = dataset_row(X, i, &data, &indices)
        dir_dot(data, indices, nnz, NULL, D, &qi)
        q[i] = qi + pd


cdef inline void row_axpy_cols(double a, rowvals_t data, const int32_t* indices, int nnz,
                               double* w, Py_ssize_t c0, Py_ssize_t c1) noexcept nogil:
    """w[j] += a * row[j] for the columns c0 <= j < c1 only."""
    cdef int k
    cdef Py_ssize_t j
    if indices == NULL:
        if data.f32 != NULL:
            for j in range(c0, c1):
                w[j] += a * data.f32[j]
        else:
            for j in range(c0, c1):
                w[j] += a * data.f64[j]
        return
    for k in range(nnz):
        j = indices[k]
        if c0 <= j < c1:
            w[j] += a * row_value(data, k)


cdef class _InnerTeam:
    """One call of ``cgvr_inner``: its arrays and settings, and ``run(tid)``, the inner loop
    every thread of the team runs (thread 0 in the caller, the others in the tables'
    executor).  Thread tid owns fixed blocks of the batch rows (margins, line-search sums,
    batch gradient factors, and for dense rows the gradient scatter), of the rows of f (line
    search on f) and of the features (gradient scatter of sparse rows, x/g/p updates, dot
    products; the owner of the last feature block also owns the intercept coordinate d)."""

    cdef const rows_t* X
    cdef MarginLoss loss
    cdef team_t team
    cdef object keep
    cdef const double* y
    cdef const double* sw
    cdef const double* sw_n
    cdef const double* x0
    cdef const double* u
    cdef const double* dl0
    cdef double* x
    cdef double* g
    cdef double* p
    cdef double* steps
    cdef double* z_full
    cdef double* q_full
    cdef Py_ssize_t* idx
    cdef double* zS
    cdef double* qS
    cdef double* yS
    cdef double* sS
    cdef double* d0S
    cdef double* cS
    cdef double* base
    cdef double* x_sel
    cdef double* acc
    cdef double* accb               # dense rows: one accumulator per batch row block
    cdef Py_ssize_t acc_stride
    cdef Py_ssize_t n, d, b, inner_iter, kb, kn, kd
    cdef double alpha, alpha_b, step_max
    cdef bint fit_intercept, full_batch, option_two, logistic
    cdef bint search_changes        # a line without decrease is searched again on loss changes
    cdef int beta_rule, ls_mode
    cdef const wolfe_t* wolfe
    cdef uint64_t seed, stream, counter
    # counters (written by thread 0)
    cdef long restarts, skipped, wolfe_fail
    cdef int n_evals, beta_resets
    cdef double wait_share         # of thread 0's wall time spent waiting at barriers
    cdef int bailed_at             # step at which thread 0 left the team (-1: it did not)
    # one O(d) sweep per step instead of two: the next direction p_{t+1} = -g_{t+1} +
    # beta p_t stays pending (dir_t): the margins form its entries as they read them (dense
    # rows: into a per-thread copy first) and the next step's sweep stores it; its scalars
    # x.p, p.p, base.p come from the algebra of that formula (sums of the one sweep), a
    # restart (p = -g) costs no sweep and no barrier.  False: the two eager sweeps (tests)
    cdef bint lazy
    cdef double* pown               # dense rows: each thread's copy of a pending direction
    cdef double* W                  # CSR rows: x, g, p, base packed (see cg_wdot), or NULL
    cdef double* part               # CSR rows: margins of each (feature block, batch row)
    cdef Py_ssize_t* rows_own       # CSR rows, batch < n: each thread's copy of the rows
    cdef Py_ssize_t* segs           # CSR rows: each thread's entries of each batch row
    cdef double* qR                 # CSR rows: the batch margins along -g (a restart's)
    cdef Py_ssize_t pown_stride

    def run_worker(self, int tid):
        with nogil:
            if team_gate_checkin(&self.team.gate) == 1:
                self.run(tid)

    cdef double open_line(self, me_t* me, phi_t* P, const dir_t* D, const double* sc,
                          bint want_z, Py_ssize_t r0, Py_ssize_t r1, Py_ssize_t nr0,
                          Py_ssize_t nr1, double* dphi0, bint use_qr=False) noexcept nogil:
        """Margins along p of this thread's batch rows (and rows of f for a line search on
        f), then phi(0), phi'(0) and the scalars of phi (from ``sc`` = (x.p, p.p, base.p)).
        use_qr: the direction is -g (a restart) and the last call (CSR rows) summed the
        batch margins along -g already."""
        cdef Py_ssize_t k, i, lo, hi, d = self.d
        cdef double* buf
        cdef double out[3]
        cdef double s, xd, pd, bd
        cdef dir_t own
        team_begin(me)
        if D.W != NULL and use_qr:
            for k in range(r0, r1):
                self.qS[k] = self.qR[k]
        elif D.W != NULL:
            # CSR rows: each thread sums the entries of its own feature blocks of every
            # batch row (the only x, g, p a thread reads are those its sweep writes), a
            # barrier, then the owner of a row adds the blocks' sums in block order.  With
            # those along -g: a restart of the direction needs no second read of the rows
            self.column_margins(me, D, want_z, D.mode != DIR_NEG_G)
            team_reduce(me, 0, 0, NULL)
            team_begin(me)
            block_sums(self.part, self.kd, self.b, r0, r1, want_z, self.x[d], dir_at(D, d),
                       self.zS, self.qS, -self.g[d],
                       self.qR if D.mode != DIR_NEG_G else NULL)
        elif self.X.indptr == NULL and D.mode != DIR_STORED:
            # dense rows read every entry of the direction: this thread forms all d + 1 of
            # them in its own buffer first (the same bits; O(d) against O(b d))
            for k in range(d + 1):
                self.pown[me.tid * self.pown_stride + k] = dir_at(D, k)
            own = dir_t(D.g, self.pown + me.tid * self.pown_stride, 0.0, DIR_STORED, NULL)
            D = &own
        if D.W == NULL:
            batch_margins(self.X, self.idx + r0, r1 - r0, self.x, D, self.zS + r0,
                          self.qS + r0, want_z)
        if self.ls_mode == LS_FULL:
            range_margins(self.X, D, self.q_full, nr0, nr1)
        buf = team_buf(me)
        phi_partials(P, self.loss, 0.0, buf, 3)
        for k in range(first_block(me, P.nblk), end_block(me, P.nblk)):
            s = 0.0
            if self.ls_mode == LS_VR:
                # sum_S s_k loss'(z0_k) q_k (the batch is P's range here)
                lo = k * P.n // P.nblk
                hi = (k + 1) * P.n // P.nblk
                for i in range(lo, hi):
                    s += self.sS[i] * self.d0S[i] * self.qS[i]
            buf[3 * k + 2] = s
        # the intercept coordinates are read before the barrier: after it, a restart of the
        # direction by their owner may rewrite p[d]
        xd, pd, bd = self.x[d], dir_at(D, d), self.base[d]
        team_reduce(me, P.nblk, 3, out)
        P.r0 = self.alpha * sc[0] + self.alpha_b * xd * pd
        P.rpp = self.alpha * sc[1] + self.alpha_b * pd * pd
        P.lin = 0.0
        if self.ls_mode == LS_VR:
            # (u - reg x0) . p - sum_S s_k loss'(z0_k) q_k
            P.lin = (sc[2] + bd * pd) - out[2]
        return phi_finish(P, 0.0, out[0], out[1], dphi0)

    cdef void restart(self, me_t* me, Py_ssize_t fb0, Py_ssize_t fb1, double* sc,
                      const double* rsc) noexcept nogil:
        """p = -g; its scalars ``rsc`` were summed with those of the current direction."""
        cdef Py_ssize_t j, d = self.d
        team_begin(me)
        for j in range(feature_edge(fb0, d, self.kd), feature_edge(fb1, d, self.kd)):
            self.p[j] = -self.g[j]
        if fb1 == self.kd:
            self.p[d] = -self.g[d]
        sc[0] = rsc[0]; sc[1] = rsc[1]; sc[2] = rsc[2]
        team_reduce(me, 0, 0, NULL)     # every p[j] written before the next margins

    cdef void column_margins(self, me_t* me, const dir_t* D, bint want_z,
                             bint want_r) noexcept nogil:
        """part[i, k] = (X_k x, X_k p, X_k (-g)) over the features of block i (8 lanes, see
        cg_wdot), for this thread's feature blocks i and every batch row k (CSR rows with
        sorted indices, as make_dataset makes them); X_k (-g) (a restart's margins) only
        when want_r."""
        cdef const rows_t* X = self.X
        cdef Py_ssize_t b = self.b, d = self.d, kd = self.kd, k, i, row, e, s, end, lo, hi
        cdef Py_ssize_t m, off
        cdef Py_ssize_t fb0 = first_block(me, kd), fb1 = end_block(me, kd)
        cdef Py_ssize_t* rows = self.rows_own + me.tid * b if self.rows_own != NULL else NULL
        cdef const int32_t* ind = X.indices
        cdef double* out
        cdef double zq, qq
        cdef int32_t c_lo = <int32_t>feature_edge(fb0, d, kd)
        cdef Py_ssize_t c_hi = feature_edge(fb1, d, kd)
        # shares of the columns below this thread's (estimates of places in a row)
        cdef double f_lo = c_lo / <double>d if d > 0 else 0.0
        cdef double f_hi = c_hi / <double>d if d > 0 else 1.0
        cdef int32_t edges[TEAM_MAX + 1]
        for i in range(kd + 1):
            edges[i] = <int32_t>feature_edge(i, d, kd)
        # the threads start at different rows (and wrap around), so that they do not wait
        # on the same row's first read; the row pointers of the rows read ahead first
        off = me.tid * b // me.team.n_threads
        for m in range(min(b, 2 * CM_AHEAD)):
            k = m + off - (b if m + off >= b else 0)
            cg_prefetch(X.indptr + (rows[k] if rows != NULL else k), 16)
        for m in range(min(b, CM_AHEAD)):
            k = m + off - (b if m + off >= b else 0)
            prefetch_row(X, rows[k] if rows != NULL else k)
        for m in range(b):
            if m + 2 * CM_AHEAD < b:
                k = m + 2 * CM_AHEAD + off
                k -= b if k >= b else 0
                cg_prefetch(X.indptr + (rows[k] if rows != NULL else k), 16)
            if m + CM_AHEAD < b:
                k = m + CM_AHEAD + off
                k -= b if k >= b else 0
                # every line of this thread's part of the row's indices and values (its
                # place in the row estimated from its columns): the part is read whole, and
                # a prefetch of its first line only left the others to miss one after the
                # other (column margins of 316 rows of the sparse benchmark, one thread:
                # all columns 137 -> 97 us, either half of them 90-135 -> 56-80 us)
                row = rows[k] if rows != NULL else k
                lo = X.indptr[row]
                hi = X.indptr[row + 1]
                e = lo + <Py_ssize_t>((hi - lo) * f_hi)
                lo += <Py_ssize_t>((hi - lo) * f_lo)
                cg_prefetch(X.indices + lo, 4 * (e - lo) + 64)
                if X.data32 != NULL:
                    cg_prefetch(X.data32 + lo, 4 * (e - lo) + 64)
                else:
                    cg_prefetch(X.data + lo, 8 * (e - lo) + 64)
            k = m + off
            k -= b if k >= b else 0
            row = rows[k] if rows != NULL else k
            s = X.indptr[row]
            end = X.indptr[row + 1]
            # first entry of the row in column c_lo or after: searched from its estimate
            # (the row's entries spread over the columns), a few entries away
            lo = s
            if c_lo > 0:
                lo = s + <Py_ssize_t>((end - s) * f_lo)
                if lo >= end or ind[lo] >= c_lo:
                    while lo > s and ind[lo - 1] >= c_lo:
                        lo -= 1
                else:
                    while lo < end and ind[lo] < c_lo:
                        lo += 1
            # the row's entries from lo, by block (s: the row's start)
            if X.data32 != NULL:
                e = s + cg_wsegs_s32(X.data32 + s, ind + s, <int>(lo - s), <int>(end - s),
                                     D.W, D.beta, D.mode, want_z, want_r, edges + fb0,
                                     <int>(fb1 - fb0), self.part + 3 * (fb0 * b + k), 3 * b)
            else:
                e = s + cg_wsegs_s64(X.data + s, ind + s, <int>(lo - s), <int>(end - s),
                                     D.W, D.beta, D.mode, want_z, want_r, edges + fb0,
                                     <int>(fb1 - fb0), self.part + 3 * (fb0 * b + k), 3 * b)
            # this thread's entries of the row, for the gradient scatter
            self.segs[2 * (me.tid * b + k)] = lo
            self.segs[2 * (me.tid * b + k) + 1] = e

    cdef void store_direction(self, me_t* me, dir_t* dr, Py_ssize_t fb0, Py_ssize_t fb1,
                              double* sc, double* gp) noexcept nogil:
        """Store the pending direction in p, with its scalars x.p, p.p, base.p summed as the
        eager sweep does, and gp = p.g."""
        cdef Py_ssize_t i, j, d = self.d, kd = self.kd
        cdef double* buf
        cdef double out[4]
        cdef double pj, s0, s1, s2, s3
        cdef double* c
        team_begin(me)
        buf = team_buf(me)
        for i in range(fb0, fb1):
            s0 = 0.0; s1 = 0.0; s2 = 0.0; s3 = 0.0
            if dr.W != NULL:
                for j in range(feature_edge(i, d, kd), feature_edge(i + 1, d, kd)):
                    pj = dir_at_packed(dr, j)
                    c = packed(dr.W, j)
                    c[4] = pj
                    s0 += pj * c[2]
                    s1 += c[0] * pj
                    s2 += pj * pj
                    s3 += c[6] * pj
            else:
                for j in range(feature_edge(i, d, kd), feature_edge(i + 1, d, kd)):
                    pj = dir_at(dr, j)
                    self.p[j] = pj
                    s0 += pj * self.g[j]
                    s1 += self.x[j] * pj
                    s2 += pj * pj
                    s3 += self.base[j] * pj
            if i == kd - 1:
                self.p[d] = dir_at(dr, d)
                s0 += self.p[d] * self.g[d]
            buf[4 * i] = s0
            buf[4 * i + 1] = s1
            buf[4 * i + 2] = s2
            buf[4 * i + 3] = s3
        team_reduce(me, kd, 4, out)
        dr.mode = DIR_STORED
        gp[0] = out[0]
        sc[0] = out[1]; sc[1] = out[2]; sc[2] = out[3]

    cdef void check_team(self, me_t* me, Py_ssize_t t) noexcept nogil:
        """Thread 0, at the end of a probe window and at every step after one passed: leave
        a team it waited for too long, or in which it worked too little in the window
        (``team.stop``, read by every thread at the next step); a failed window is followed
        by a fresh one while ``windows`` remain."""
        cdef double wall
        cdef bint failed
        if me.tid == 0 and self.team.n_threads > 1 and t + 1 >= me.win_end:
            wall = team_wall() - me.win_wall
            failed = me.wait - me.win_wait > TEAM_MAX_WAIT * wall or (
                me.probing and team_now() - me.win_cpu - me.wait_cpu < TEAM_MIN_WORK * wall)
            if failed and me.probing and me.windows > 1:
                me.windows -= 1
                me.win_wall, me.win_cpu, me.win_wait = team_wall(), team_now(), me.wait
                me.wait_cpu = 0.0
                me.win_end = t + 1 + TEAM_PROBE_STEPS
            elif failed:
                self.team.stop = 1
            else:
                me.probing = False

    cdef void run(self, int tid) noexcept nogil:
        cdef double started = team_wall()
        cdef me_t me = me_t(&self.team, tid, 0, 0, 0.0, 0.0, 0.0, 0.0, tid == 0, started,
                            team_now() if tid == 0 else 0.0, 0.0, TEAM_PROBE_STEPS,
                            TEAM_PROBE_WINDOWS)
        cdef const rows_t* X = self.X
        cdef Py_ssize_t n = self.n, d = self.d, D = d + 1, b = self.b
        cdef Py_ssize_t kb = self.kb, kd = self.kd, kn = self.kn
        cdef Py_ssize_t r0 = first_block(&me, kb) * b // kb, r1 = end_block(&me, kb) * b // kb
        cdef Py_ssize_t nr0 = first_block(&me, kn) * n // kn
        cdef Py_ssize_t nr1 = end_block(&me, kn) * n // kn
        cdef Py_ssize_t fb0 = first_block(&me, kd), fb1 = end_block(&me, kd)
        cdef Py_ssize_t c0 = feature_edge(fb0, d, kd), c1 = feature_edge(fb1, d, kd)
        cdef bint owns_d = fb1 == kd       # the last thread
        cdef bint all_cols = c0 == 0 and c1 == d
        cdef bint row_scatter = self.accb != NULL
        cdef double* x = self.x
        cdef double* p = self.p
        cdef double* g = self.g
        cdef double* base = self.base
        cdef double* acc = self.acc
        cdef double* zS = self.zS
        cdef double* qS = self.qS
        cdef double* cS = self.cS
        cdef double alpha = self.alpha, alpha_b = self.alpha_b, inv_b = 1.0 / b
        cdef bint fit_intercept = self.fit_intercept, full_batch = self.full_batch
        cdef double sc[3]
        cdef double dots[13]
        cdef double gg_old = 0.0        # g_t.g_t (lazy)
        cdef bint want_pg = self.beta_rule == BETA_HS or self.beta_rule == BETA_DY
        cdef double rsc[3]              # the scalars of -g (see restart)
        cdef double s5[5]
        cdef double* buf
        cdef double gb, gn, xj, pj, s0, s1, s2, s3, beta, gp, coef, a, phi0, dphi0
        cdef bint lazy = self.lazy
        cdef bint use_qr
        cdef dir_t dr = dir_t(self.g, self.p, 0.0, DIR_STORED, self.W)
        # column-owned margins: this thread's copy of the batch rows (NULL: the full batch)
        cdef Py_ssize_t* myrows = self.rows_own + tid * b if self.rows_own != NULL else NULL
        cdef Py_ssize_t* mysegs = self.segs + 2 * tid * b if self.segs != NULL else NULL
        cdef double* W = self.W
        cdef double* c
        cdef int n_evals = 0, failed = 0, beta_resets = 0
        cdef long restarts = 0, skipped = 0, wolfe_fail = 0
        cdef Py_ssize_t tau = -1, t, k, j, i, lo, hi
        cdef rng_state rng
        cdef rowvals_t data
        cdef const int32_t* indices
        cdef int nnz
        cdef phi_t P
        if self.ls_mode == LS_FULL:
            P = phi_t(self.z_full, self.q_full, self.y, self.sw_n, n, 0.0, 0.0, 0.0, &me, kn,
                      self.logistic, False)
        else:
            P = phi_t(zS, qS, self.yS, self.sS, b, 0.0, 0.0, 0.0, &me, kb, self.logistic,
                      False)
        rng_init(&rng, self.seed, self.stream, self.counter)
        if self.option_two:
            tau = rng_randint(&rng, self.inner_iter)
        # base = u - reg(x0): the VR gradient at x on batch S is
        # base + reg(x) + sum_S s_k (loss'(z_k) - loss'(z0_k)) X_k / b
        team_begin(&me)
        for j in range(c0, c1):
            base[j] = self.u[j] - alpha * self.x0[j]
        if owns_d:
            base[d] = self.u[d] - alpha_b * self.x0[d] if fit_intercept else 0.0
        # dense scalars x.p, p.p, base.p of the current direction (then kept up to date by
        # the sweep that forms the next direction)
        # and those of -g (a restart's direction; then kept up to date with them)
        buf = team_buf(&me)
        for i in range(fb0, fb1):
            lo = feature_edge(i, d, kd)
            hi = feature_edge(i + 1, d, kd)
            direction_scalars(x + lo, p + lo, base + lo, hi - lo, buf + 6 * i)
            for j in range(3):
                s5[j] = 0.0
            for j in range(lo, hi):
                restart_terms(x[j], -g[j], base[j], s5)
            for j in range(3):
                buf[6 * i + 3 + j] = s5[j]
        if W != NULL:
            # this thread's features, packed (read by every thread after the barrier)
            for j in range(c0, c1):
                c = packed(W, j)
                c[0] = x[j]; c[2] = g[j]; c[4] = p[j]; c[6] = base[j]
        team_reduce(&me, kd, 6, dots)
        sc[0] = dots[0]; sc[1] = dots[1]; sc[2] = dots[2]
        rsc[0] = dots[3]; rsc[1] = dots[4]; rsc[2] = dots[5]
        gg_old = dots[4] + g[d] * g[d]

        for t in range(self.inner_iter):
            if self.team.stop and self.team.n_threads > 1:
                # thread 0 leaves the team (decided before the last barrier of step t - 1):
                # one more barrier (every thread has read the last sums), the workers
                # return and thread 0 owns every block from here on
                team_barrier_wait(&self.team.bar, &me.sense, tid)
                if tid != 0:
                    return
                self.team.n_threads = 1
                self.bailed_at = t
                r0, r1, nr0, nr1 = 0, b, 0, n
                fb0, fb1, c0, c1 = 0, kd, 0, d
                owns_d, all_cols = True, True
            if t == tau:
                for j in range(c0, c1):
                    self.x_sel[j] = packed(W, j)[0] if W != NULL else x[j]
                if owns_d:
                    self.x_sel[d] = x[d]
            if not full_batch:
                # every thread draws the whole batch (one stream), keeps its own rows
                for k in range(b):
                    i = rng_randint(&rng, n)
                    if myrows != NULL:
                        myrows[k] = i
                    if r0 <= k < r1:
                        self.idx[k] = i
                        self.yS[k] = self.y[i]
                        self.sS[k] = self.sw[i] * inv_b
                        self.d0S[k] = self.dl0[i]
            elif t == 0:
                # deterministic full batch: the inner loop is exact nonlinear CG on f
                for k in range(r0, r1):
                    self.idx[k] = k
                    self.yS[k] = self.y[k]
                    self.sS[k] = self.sw[k] * inv_b
                    self.d0S[k] = self.dl0[k]
            # full batch: zS = X x is carried over from the previous step (zS += a qS)
            phi0 = self.open_line(&me, &P, &dr, sc, not full_batch or t == 0, r0, r1, nr0,
                                  nr1, &dphi0)
            n_evals += 1
            if not (dphi0 < 0):
                # not a descent direction of the line-search objective: restart with -g
                restarts += 1
                if lazy:
                    use_qr = W != NULL and dr.mode != DIR_NEG_G
                    dr.mode = DIR_NEG_G
                    sc[0] = rsc[0]; sc[1] = rsc[1]; sc[2] = rsc[2]
                else:
                    use_qr = False
                    self.restart(&me, fb0, fb1, sc, rsc)
                phi0 = self.open_line(&me, &P, &dr, sc, False, r0, r1, nr0, nr1, &dphi0,
                                      use_qr)
                n_evals += 1
            a = 0.0
            if dphi0 < 0:
                a = strong_wolfe(&P, self.loss, phi0, dphi0, self.wolfe, self.step_max, &n_evals,
                                 &failed)
                if a == 0.0 and self.search_changes:
                    # no step decreased phi: near the optimum its decrease is below the
                    # rounding of phi(0), a sum over many rows.  Search again on the loss
                    # changes (change_along_line); away from it the first search suffices
                    P.change = True
                    a = strong_wolfe(&P, self.loss, 0.0, dphi0, self.wolfe, self.step_max,
                                     &n_evals, &failed)
                    P.change = False
                wolfe_fail += failed
            if a == 0.0:
                skipped += 1
            if tid == 0:
                self.steps[t] = a
            # g_{t+1}: VR gradient at x_{t+1} on the same batch (Eq. 3).  Per batch row the
            # factor s_k (loss'(z_k) - loss'(z0_k)) (row blocks), then the scatter of the rows
            # into acc (all zeros on entry; feature blocks, O(nnz(X_S))) and the sweep(s) over
            # the features: one with the direction pending (lazy, the default; see
            # _InnerTeam.lazy), else two (the first moves x, forms g_{t+1} in acc and the dot
            # products of the beta rules, the second forms p_{t+1}, copies g_{t+1} to g,
            # zeroes acc and forms the scalars of the next line search).
            team_begin(&me)
            if a != 0.0:
                for k in range(r0, r1):
                    zS[k] += a * qS[k]
                if self.ls_mode == LS_FULL:
                    for i in range(nr0, nr1):
                        self.z_full[i] += a * self.q_full[i]
            buf = team_buf(&me)
            for i in range(first_block(&me, kb), end_block(&me, kb)):
                s0 = 0.0
                for k in range(i * b // kb, (i + 1) * b // kb):
                    coef = self.sS[k] * (self.loss.dloss(zS[k], self.yS[k]) - self.d0S[k])
                    cS[k] = coef
                    s0 += coef
                    if row_scatter and coef != 0.0:
                        # dense rows: into the row block's own accumulator, while the row
                        # is still in this thread's cache
                        nnz = dataset_row(X, self.idx[k], &data, &indices)
                        row_axpy(coef, data, indices, nnz, self.accb + i * self.acc_stride)
                buf[i] = s0
            team_reduce(&me, kb, 1, &gb)

            team_begin(&me)
            if row_scatter:
                # acc[j] = the row blocks' sums of feature j, in block order
                for i in range(fb0, fb1):
                    for j in range(feature_edge(i, d, kd), feature_edge(i + 1, d, kd)):
                        s0 = self.accb[j]
                        self.accb[j] = 0.0
                        for k in range(1, kb):
                            s0 += self.accb[k * self.acc_stride + j]
                            self.accb[k * self.acc_stride + j] = 0.0
                        acc[j] = s0
            elif self.segs != NULL:
                # CSR rows: this thread's part of each row, found by column_margins
                for k in range(b):
                    coef = cS[k]
                    if coef != 0.0:
                        lo = mysegs[2 * k]
                        hi = mysegs[2 * k + 1]
                        if X.data32 != NULL:
                            for j in range(lo, hi):
                                acc[X.indices[j]] += coef * X.data32[j]
                        else:
                            for j in range(lo, hi):
                                acc[X.indices[j]] += coef * X.data[j]
            elif c1 > c0:
                for k in range(b):
                    coef = cS[k]
                    if coef != 0.0:
                        nnz = dataset_row(X, self.idx[k], &data, &indices)
                        if all_cols:
                            row_axpy(coef, data, indices, nnz, acc)
                        else:
                            row_axpy_cols(coef, data, indices, nnz, acc, c0, c1)
            if lazy:
                # one sweep: p_t formed from g_t and p_{t-1} (it was pending), x moved,
                # g_{t+1} formed, acc zeroed, p_t and g_{t+1} stored, and the sums that give
                # beta and (by the algebra of p_{t+1} = -g_{t+1} + beta p_t) the scalars of
                # the next direction, which stays pending; g_t.g_t is the g'.g' of the
                # previous step (the same sums of the same entries)
                buf = team_buf(&me)
                for i in range(fb0, fb1):
                    if W != NULL:
                        cg_lazy_sweep_w(W, acc, alpha, a, dr.beta, dr.mode, want_pg,
                                        feature_edge(i, d, kd), feature_edge(i + 1, d, kd),
                                        buf + 13 * i)
                    else:
                        cg_lazy_sweep(x, p, g, acc, base, alpha, a, dr.beta, dr.mode,
                                      want_pg, feature_edge(i, d, kd),
                                      feature_edge(i + 1, d, kd), buf + 13 * i)
                    for j in range(9, 13):
                        buf[13 * i + j] = 0.0
                    if i == kd - 1:
                        # the intercept's terms of g'.g', g'.g, p.g', p.g
                        pj = dir_at(&dr, d)
                        x[d] += a * pj
                        if fit_intercept:
                            gn = base[d] + alpha_b * x[d] + gb
                        else:
                            gn = 0.0
                        buf[13 * i + 9] = gn * gn
                        buf[13 * i + 10] = gn * g[d]
                        buf[13 * i + 11] = pj * gn
                        buf[13 * i + 12] = pj * g[d]
                        p[d] = pj
                        g[d] = gn
                self.check_team(&me, t)
                team_reduce(&me, kd, 13, dots)
                # dots: over the features g'.g', g'.g, p.g', p.g, x.g', base.g', x.p, p.p,
                # base.p, then the intercept's terms of the first four
                gg = dots[0] + dots[9]
                gp = dots[2] + dots[11]
                beta = beta_from_dots(self.beta_rule, gg, dots[1] + dots[10], gg_old, gp,
                                      dots[3] + dots[12], &beta_resets)
                gg_old = gg
                gp = -gg + beta * gp            # p_{t+1}.g_{t+1}
                dr.mode = DIR_LAZY
                dr.beta = beta
                sc[0] = -dots[4] + beta * dots[6]
                sc[1] = (dots[0] - 2.0 * beta * dots[2]) + beta * beta * dots[7]
                sc[2] = -dots[5] + beta * dots[8]
                rsc[0] = -dots[4]; rsc[1] = dots[0]; rsc[2] = -dots[5]
                if not (sc[1] > LAZY_CANCEL * (dots[0] + beta * beta * dots[7])):
                    # p.p cancels (or is 0): its sum from the formed direction instead
                    self.store_direction(&me, &dr, fb0, fb1, sc, &gp)
                if not (gp < 0):
                    # descent guard on the VR gradient: the next direction is -g
                    restarts += 1
                    dr.mode = DIR_NEG_G
                    sc[0] = rsc[0]; sc[1] = rsc[1]; sc[2] = rsc[2]
                continue
            buf = team_buf(&me)
            for i in range(fb0, fb1):
                for j in range(5):
                    s5[j] = 0.0
                for j in range(feature_edge(i, d, kd), feature_edge(i + 1, d, kd)):
                    xj = x[j] + a * p[j]
                    x[j] = xj
                    gn = base[j] + alpha * xj + acc[j]
                    acc[j] = gn         # acc holds g_{t+1} until the next sweep zeroes it
                    beta_dot_terms(gn, g[j], p[j], s5)
                if i == kd - 1:
                    x[d] += a * p[d]
                    if fit_intercept:
                        gn = base[d] + alpha_b * x[d] + gb
                    else:
                        gn = 0.0
                    acc[d] = gn
                    beta_dot_terms(gn, g[d], p[d], s5)
                for j in range(5):
                    buf[5 * i + j] = s5[j]
            team_reduce(&me, kd, 5, dots)
            beta = beta_from_dots(self.beta_rule, dots[0], dots[1], dots[2], dots[3], dots[4],
                                  &beta_resets)

            team_begin(&me)
            buf = team_buf(&me)
            for i in range(fb0, fb1):
                s0 = 0.0; s1 = 0.0; s2 = 0.0; s3 = 0.0
                for j in range(3):
                    s5[j] = 0.0
                for j in range(feature_edge(i, d, kd), feature_edge(i + 1, d, kd)):
                    gn = acc[j]
                    acc[j] = 0.0
                    pj = -gn + beta * p[j]
                    p[j] = pj
                    g[j] = gn
                    s0 += pj * gn
                    s1 += x[j] * pj
                    s2 += pj * pj
                    s3 += base[j] * pj
                    restart_terms(x[j], -gn, base[j], s5)
                if i == kd - 1:
                    gn = acc[d]
                    acc[d] = 0.0
                    p[d] = -gn + beta * p[d]
                    g[d] = gn
                    s0 += p[d] * gn
                buf[7 * i] = s0
                buf[7 * i + 1] = s1
                buf[7 * i + 2] = s2
                buf[7 * i + 3] = s3
                for j in range(3):
                    buf[7 * i + 4 + j] = s5[j]
            self.check_team(&me, t)
            team_reduce(&me, kd, 7, dots)
            gp = dots[0]
            sc[0] = dots[1]; sc[1] = dots[2]; sc[2] = dots[3]
            rsc[0] = dots[4]; rsc[1] = dots[5]; rsc[2] = dots[6]
            if not (gp < 0):
                # descent guard on the VR gradient
                restarts += 1
                self.restart(&me, fb0, fb1, sc, rsc)
        # the last direction, stored (own feature blocks: no other thread reads them)
        if W != NULL:
            for j in range(c0, c1):
                c = packed(W, j)
                p[j] = dir_at_packed(&dr, j)
                x[j] = c[0]
                g[j] = c[2]
        elif dr.mode != DIR_STORED:
            for j in range(c0, c1):
                p[j] = dir_at(&dr, j)
        if owns_d and dr.mode != DIR_STORED:
            p[d] = dir_at(&dr, d)
        if self.option_two:
            for j in range(c0, c1):
                x[j] = self.x_sel[j]
            if owns_d:
                x[d] = self.x_sel[d]
        if tid == 0:
            self.restarts = restarts
            self.skipped = skipped
            self.n_evals = n_evals
            self.wolfe_fail = wolfe_fail
            self.beta_resets = beta_resets
            self.counter = rng.counter
            self.wait_share = me.wait / (team_wall() - started) if me.wait > 0 else 0.0
            if _profiling and self.team.n_threads == 1:
                _add_parallel(me.par)


cdef void _add_parallel(double seconds) noexcept nogil:
    global _parallel_seconds
    _parallel_seconds += seconds


def cgvr_inner(HeadTables tables, CGOptions options, double[::1] x, const double[::1] x0,
               const double[::1] u, const double[::1] dl0, double[::1] g, double[::1] p,
               Py_ssize_t batch_size, double step_max, uint64_t counter, long[::1] stats,
               double[::1] steps, double[::1] z_full=None):
    """Run the m inner steps of one CGVR outer iteration in place.

    A ``batch_size`` >= n means the deterministic full batch (each row once, no draws): the
    inner loop is then exact nonlinear CG on f.  On entry ``x`` = ``x0`` = w_k, ``u`` =
    grad f(w_k), ``dl0`` = loss'(X w_k), ``g`` = the restart gradient (h_k or u_k) and ``p`` =
    -g.  On exit ``x`` = w_{k+1} (Option I: x_m; Option II: x_t for a random t in 0..m-1),
    ``g`` = g_m (= h_{k+1}).  Steps are capped at ``step_max``.  The line search on f
    (``options`` line search "full") needs ``z_full`` = X w_k, updated in place.  ``stats``
    accumulates the counters listed in N_STATS, ``steps[t]`` receives the accepted step of
    inner step t.  Returns the RNG counter after the last draw.

    With an executor set on ``tables`` (``HeadTables.set_executor``), the steps run on a
    team of its threads over fixed blocks of the batch and of the features, summed in block
    order: the result is bitwise the same for every number of threads.
    """
    cdef const rows_t* X = &tables.ds.rows
    cdef Py_ssize_t n = X.n_samples, d = X.n_features, D = d + 1
    cdef Py_ssize_t inner_iter = options.inner_iter
    for name, arr in (("x", x), ("x0", x0), ("u", u), ("g", g), ("p", p)):
        _check_length(name, arr.shape[0], D)
    _check_length("dl0", dl0.shape[0], n)
    if batch_size < 1 or stats.shape[0] < N_STATS or steps.shape[0] < inner_iter:
        raise ValueError("batch_size must be >= 1, stats hold N_STATS and steps inner_iter "
                         "entries")
    if options.ls_mode == LS_FULL and (z_full is None or z_full.shape[0] != n):
        raise ValueError("the line search on f needs z_full = X w_k (length n_samples)")
    cdef bint full_batch = batch_size >= n
    cdef Py_ssize_t b = n if full_batch else batch_size
    cdef _InnerTeam S = _InnerTeam.__new__(_InnerTeam)
    # batch workspaces
    cdef Py_ssize_t[::1] idx = np.empty(b, dtype=np.intp)
    cdef double[::1] work = np.empty(6 * b)
    cdef double[::1] vec = np.empty(2 * D)
    cdef double[::1] acc = np.zeros(D + 8)     # used from its first 64-byte boundary
    cdef Py_ssize_t acc_off = ((64 - <size_t>&acc[0] % 64) % 64) // 8
    # dense rows: the gradient scatter goes by row blocks into kb accumulators (each 64-byte
    # aligned, padded apart), summed per feature in block order; sparse rows: by feature
    # blocks into acc (kb accumulators of n_features entries would cost more than the rows)
    cdef Py_ssize_t kb = team_blocks(b, TEAM_ROWS)
    cdef Py_ssize_t acc_stride = (D + 8) // 8 * 8 + 8
    cdef double[::1] accb = np.zeros(kb * acc_stride + 8) if X.indptr == NULL else None
    cdef Py_ssize_t accb_off = ((64 - <size_t>&accb[0] % 64) % 64) // 8 if accb is not None \
        else 0
    cdef double[::1] red = np.zeros(2 * RED_STRIDE)
    cdef double[::1] q_full = None     # margins X p (line search on f)
    cdef const double[::1] sw_n = None
    cdef Py_ssize_t pown_stride = (D + 8) // 8 * 8 + 8
    cdef double[::1] pown = np.empty(TEAM_MAX * pown_stride) if X.indptr == NULL else None
    # CSR rows: x, g, p, base packed in 64-byte lines (see cg_wdot)
    cdef double[::1] packs = np.empty(8 * ((d + 1) // 2) + 8) \
        if X.indptr != NULL and LAZY_DIRECTION else None
    cdef Py_ssize_t packs_off = ((64 - <size_t>&packs[0] % 64) % 64) // 8 \
        if packs is not None else 0
    cdef double[::1] part = np.empty(3 * b * team_blocks(d, TEAM_COLS)) \
        if packs is not None else None
    cdef double[::1] qR = np.empty(b) if packs is not None else None
    cdef Py_ssize_t[::1] rows_own = \
        np.empty(min(tables.n_threads, TEAM_MAX) * b, dtype=np.intp) \
        if packs is not None and not full_batch else None
    cdef Py_ssize_t[::1] segs = \
        np.empty(2 * min(tables.n_threads, TEAM_MAX) * b, dtype=np.intp) \
        if packs is not None else None
    S.qR = &qR[0] if qR is not None else NULL
    S.keep = (idx, work, vec, acc, red, accb, pown, packs, part, rows_own, segs, qR)
    S.X, S.loss = X, tables.loss
    S.logistic = type(tables.loss) is LogLoss
    # a hinge (a subgradient) fails lines at its kinks, not at the rounding of phi(0)
    S.search_changes = tables.loss.differentiable
    S.y, S.sw = &tables.y[0], &tables.sw[0]
    S.x0, S.u, S.dl0 = &x0[0], &u[0], &dl0[0]
    S.x, S.g, S.p, S.steps = &x[0], &g[0], &p[0], &steps[0]
    S.idx = &idx[0]
    S.zS, S.qS, S.yS = &work[0], &work[b], &work[2 * b]
    S.sS, S.d0S, S.cS = &work[3 * b], &work[4 * b], &work[5 * b]
    S.base, S.x_sel, S.acc = &vec[0], &vec[D], &acc[acc_off]
    S.accb = &accb[accb_off] if accb is not None else NULL
    S.acc_stride = acc_stride
    S.lazy = LAZY_DIRECTION
    S.pown_stride = pown_stride
    S.pown = &pown[0] if pown is not None else NULL
    S.W = &packs[packs_off] if packs is not None else NULL
    S.part = &part[0] if part is not None else NULL
    S.rows_own = &rows_own[0] if rows_own is not None else NULL
    S.segs = &segs[0] if segs is not None else NULL
    S.n, S.d, S.b, S.inner_iter = n, d, b, inner_iter
    S.kb, S.kd = team_blocks(b, TEAM_ROWS), team_blocks(d, TEAM_COLS)
    S.kn = team_blocks(n, TEAM_ROWS)
    S.alpha, S.alpha_b, S.step_max = tables.alpha, tables.alpha_b, step_max
    S.fit_intercept, S.full_batch, S.option_two = (tables.fit_intercept, full_batch,
                                                   options.option_two)
    S.beta_rule, S.ls_mode, S.wolfe = options.beta_rule, options.ls_mode, &options.wolfe
    S.seed, S.stream, S.counter = tables.seed, tables.stream, counter
    S.z_full = S.q_full = NULL
    S.sw_n = NULL
    if options.ls_mode == LS_FULL:
        q_full = np.empty(n)
        sw_n = tables.full_weights
        S.keep = (S.keep, q_full, sw_n, options)
        S.z_full, S.q_full, S.sw_n = &z_full[0], &q_full[0], &sw_n[0]
    cdef int n_threads = tables.n_threads if tables.executor is not None else 1
    if tables.solo_calls > 0:
        tables.solo_calls -= 1
        n_threads = 1
    n_threads = min(n_threads, TEAM_MAX)
    S.team.red = &red[0]
    S.team.n_threads = n_threads
    S.team.stop = 0
    S.bailed_at = -1
    team_barrier_init(&S.team.bar, n_threads)
    team_gate_init(&S.team.gate)
    workers = []
    cdef long opened = 1
    cdef double timeout
    try:
        for tid in range(1, n_threads):
            workers.append(tables.executor.submit(S.run_worker, tid))
    finally:
        # workers that do not start in time (a busy or shut-down executor) are sent away
        # and the caller runs every block: the bits do not depend on it
        timeout = TEAM_START_TIMEOUT if len(workers) == n_threads - 1 else 0.0
        with nogil:
            if n_threads > 1:
                opened = team_gate_open(&S.team.gate, n_threads - 1, timeout)
            if not opened:
                S.team.n_threads = 1
                team_barrier_init(&S.team.bar, 1)
    with nogil:
        S.run(0)
    if opened:
        for future in workers:
            future.result()
    tables.wait_share = S.wait_share
    tables.bailed_at = S.bailed_at
    if n_threads > 1 and S.bailed_at < 0 and S.wait_share > TEAM_MAX_WAIT:
        # the other threads were mostly descheduled (a loaded machine): the next inner
        # loops run alone, then the team is tried again (the bits do not depend on it)
        tables.solo_calls = TEAM_SOLO_CALLS
    stats[STAT_RESTARTS] += S.restarts
    stats[STAT_SKIPPED] += S.skipped
    stats[STAT_LS_EVALS] += S.n_evals
    stats[STAT_WOLFE_FAIL] += S.wolfe_fail
    stats[STAT_BETA_RESET] += S.beta_resets
    return S.counter


# ---------------------------------------------------------------------------------------------
# baseline: (mini-batch) SVRG with a fixed step (paper Alg. 1; batch sqrt(n) = the reference
# code's "SLBFGS", whose curvature update never runs)


def svrg_inner(HeadTables tables, double[::1] x, const double[::1] x0, const double[::1] u,
               const double[::1] dl0, Py_ssize_t inner_iter, Py_ssize_t batch_size,
               double step, uint64_t counter):
    """m steps x <- x - step * g_VR(x) in place (Option I).  Returns the RNG counter."""
    cdef const rows_t* X = &tables.ds.rows
    cdef Py_ssize_t n = X.n_samples, d = X.n_features, D = d + 1
    for name, arr in (("x", x), ("x0", x0), ("u", u)):
        _check_length(name, arr.shape[0], D)
    _check_length("dl0", dl0.shape[0], n)
    if batch_size < 1:
        raise ValueError("batch_size must be >= 1")
    cdef MarginLoss loss = tables.loss
    cdef const double* y = &tables.y[0]
    cdef const double* sw = &tables.sw[0]
    cdef double alpha = tables.alpha, alpha_b = tables.alpha_b
    cdef bint fit_intercept = tables.fit_intercept
    cdef Py_ssize_t b = batch_size, t, k, j, i
    cdef rng_state rng
    cdef double inv_b = 1.0 / b, zk, coef
    cdef double[::1] gv = np.empty(D), base = np.empty(D)
    cdef rowvals_t data
    cdef const int32_t* indices
    cdef int nnz
    rng_init(&rng, tables.seed, tables.stream, counter)
    with nogil:
        for j in range(d):
            base[j] = u[j] - alpha * x0[j]
        base[d] = u[d] - alpha_b * x0[d] if fit_intercept else 0.0
        for t in range(inner_iter):
            for j in range(d):
                gv[j] = base[j] + alpha * x[j]
            gv[d] = base[d] + alpha_b * x[d] if fit_intercept else 0.0
            for k in range(b):
                i = rng_randint(&rng, n)
                nnz = dataset_row(X, i, &data, &indices)
                zk = fast_dot(data, indices, nnz, &x[0]) + x[d]
                coef = sw[i] * inv_b * (loss.dloss(zk, y[i]) - dl0[i])
                if coef != 0.0:
                    row_axpy(coef, data, indices, nnz, &gv[0])
                    if fit_intercept:
                        gv[d] += coef
            dense_axpy(-step, &gv[0], &x[0], D)
    return rng.counter


def uniform_vector(uint64_t seed, uint64_t stream, Py_ssize_t size):
    """``size`` uniform draws in [0, 1) from stream (seed, stream) (the paper's w_0 ~ U[0,1]^d)."""
    cdef rng_state rng
    cdef double[::1] out = np.empty(size)
    cdef Py_ssize_t j
    rng_init(&rng, seed, stream, 0)
    for j in range(size):
        out[j] = rng_uniform(&rng)
    return np.asarray(out)
