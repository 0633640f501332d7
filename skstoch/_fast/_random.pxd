# Counter-based random numbers for every skstoch kernel.
#
# A stream is keyed by (seed, stream); draw number c of it is a pure function of
# (seed, stream, c): splitmix64's output function applied to key + (c + 1) * GOLDEN.
# Only integer arithmetic, +, -, *, / and sqrt are used (all exactly rounded under
# IEEE 754; the build turns FMA contraction off), and the logarithm of the normal
# sampler is our own series, never libm's, so a stream has the same bits on every
# platform and for every numpy version.  The Python reference in
# skstoch/utils/_random_reference.py computes the same streams; the tests compare them.
from libc.math cimport sqrt
from libc.stdint cimport uint64_t, int64_t

cdef extern from *:
    """
    #define SKSTOCH_GOLDEN 0x9E3779B97F4A7C15ULL
    """
    uint64_t GOLDEN "SKSTOCH_GOLDEN"

ctypedef struct rng_state:
    uint64_t key       # derived from (seed, stream)
    uint64_t counter   # number of 64-bit words drawn so far


cdef inline uint64_t mix64(uint64_t z) noexcept nogil:
    """splitmix64 output function (Steele, Lea & Flood 2014)."""
    z = (z ^ (z >> 30)) * <uint64_t>0xBF58476D1CE4E5B9ULL
    z = (z ^ (z >> 27)) * <uint64_t>0x94D049BB133111EBULL
    return z ^ (z >> 31)


cdef inline void rng_init(rng_state* s, uint64_t seed, uint64_t stream,
                          uint64_t counter) noexcept nogil:
    s.key = mix64(mix64(seed) + (stream + 1) * GOLDEN)
    s.counter = counter


cdef inline uint64_t rng_u64(rng_state* s) noexcept nogil:
    s.counter += 1
    return mix64(s.key + s.counter * GOLDEN)


cdef inline double rng_uniform(rng_state* s) noexcept nogil:
    """Uniform double in [0, 1) with 53 random bits."""
    return <double>(rng_u64(s) >> 11) * (1.0 / 9007199254740992.0)


cdef inline Py_ssize_t rng_randint(rng_state* s, Py_ssize_t n) noexcept nogil:
    """Unbiased integer in [0, n) for n >= 1 (rejection of the short last block)."""
    cdef uint64_t un = <uint64_t>n
    cdef uint64_t threshold = (<uint64_t>0 - un) % un   # 2**64 mod n
    cdef uint64_t x = rng_u64(s)
    while x < threshold:
        x = rng_u64(s)
    return <Py_ssize_t>(x % un)


cdef inline double portable_log(double x) noexcept nogil:
    """Natural logarithm of x > 0 from + - * / only (identical bits on every IEEE platform).

    x = m 2**e with m in [sqrt(1/2), sqrt(2)); log m = 2 atanh(t), t = (m - 1) / (m + 1),
    |t| <= 0.1716; the odd series up to t**29 leaves a relative error below 1e-17.
    """
    cdef int e = 0
    cdef double t, t2, term, acc
    cdef int k
    # exact scaling into [sqrt(1/2), sqrt(2)) by powers of two (no frexp: its range handling
    # differs for subnormals on some libms)
    while x >= 1.4142135623730951:
        x *= 0.5
        e += 1
    while x < 0.7071067811865476:
        x *= 2.0
        e -= 1
    t = (x - 1.0) / (x + 1.0)
    t2 = t * t
    acc = 0.0
    term = t
    for k in range(15):
        acc += term / (2 * k + 1)
        term *= t2
    return 2.0 * acc + e * 0.6931471805599453


cdef inline double rng_normal(rng_state* s) noexcept nogil:
    """Standard normal by Marsaglia's polar method (one value per accepted pair; the second
    value of the pair is discarded so that a draw depends only on the counter it starts at)."""
    cdef double u, v, r
    while True:
        u = 2.0 * rng_uniform(s) - 1.0
        v = 2.0 * rng_uniform(s) - 1.0
        r = u * u + v * v
        if 0.0 < r < 1.0:
            return u * sqrt(-2.0 * portable_log(r) / r)
