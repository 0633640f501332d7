# One way to read rows of dense C-contiguous and CSR matrices, float64 or float32.
#
# A row is (values, indices pointer, nnz).  Dense rows have indices == NULL and
# nnz == n_features, so the helpers below run a contiguous loop for them and an indexed
# loop for sparse rows; every kernel reads rows through ``dataset_row`` and never
# branches on the storage itself.  float32 values are read as they are stored (no float64
# copy of X) and widened to double, exactly, in each product: every accumulator is a
# double, so a float32 X computes exactly what its float64 conversion would.
from libc.stdint cimport int32_t, int64_t

ctypedef struct rows_t:
    const double* data        # float64 storage, else NULL
    const float* data32       # float32 storage, else NULL
    const int32_t* indices    # NULL for dense storage
    const int64_t* indptr     # NULL for dense storage
    Py_ssize_t n_samples
    Py_ssize_t n_features


ctypedef struct rowvals_t:
    # the stored values of one row: ``f64`` for float64 storage, else ``f32`` (the other NULL)
    const double* f64
    const float* f32


cdef class RowDataset:
    cdef rows_t rows
    cdef readonly bint is_sparse
    cdef object _keepalive    # the arrays rows_t points into


cdef inline int dataset_row(const rows_t* X, Py_ssize_t i, rowvals_t* data,
                            const int32_t** indices) noexcept nogil:
    """Point ``data``/``indices`` at row i and return its number of stored entries."""
    cdef int64_t start
    cdef int nnz
    if X.indptr == NULL:
        start = i * X.n_features
        indices[0] = NULL
        nnz = <int>X.n_features
    else:
        start = X.indptr[i]
        indices[0] = X.indices + start
        nnz = <int>(X.indptr[i + 1] - start)
    if X.data32 == NULL:
        data.f64 = X.data + start
        data.f32 = NULL
    else:
        data.f64 = NULL
        data.f32 = X.data32 + start
    return nnz


cdef inline double row_dot(rowvals_t data, const int32_t* indices, int nnz,
                           const double* w) noexcept nogil:
    """<row, w> for a dense or sparse row."""
    cdef double acc = 0.0
    cdef int k
    if data.f32 != NULL:
        if indices == NULL:
            for k in range(nnz):
                acc += data.f32[k] * w[k]
        else:
            for k in range(nnz):
                acc += data.f32[k] * w[indices[k]]
        return acc
    if indices == NULL:
        for k in range(nnz):
            acc += data.f64[k] * w[k]
    else:
        for k in range(nnz):
            acc += data.f64[k] * w[indices[k]]
    return acc


cdef inline void row_axpy(double a, rowvals_t data, const int32_t* indices, int nnz,
                          double* w) noexcept nogil:
    """w += a * row."""
    cdef int k
    if data.f32 != NULL:
        if indices == NULL:
            for k in range(nnz):
                w[k] += a * data.f32[k]
        else:
            for k in range(nnz):
                w[indices[k]] += a * data.f32[k]
        return
    if indices == NULL:
        for k in range(nnz):
            w[k] += a * data.f64[k]
    else:
        for k in range(nnz):
            w[indices[k]] += a * data.f64[k]


cdef inline double row_sqnorm(rowvals_t data, int nnz) noexcept nogil:
    """||row||^2 (stored entries only, so it is the same for dense and sparse rows)."""
    cdef double acc = 0.0, v
    cdef int k
    if data.f32 != NULL:
        for k in range(nnz):
            v = data.f32[k]
            acc += v * v
        return acc
    for k in range(nnz):
        acc += data.f64[k] * data.f64[k]
    return acc


cdef inline double row_value(rowvals_t data, int k) noexcept nogil:
    """Stored entry k of the row, as a double."""
    return data.f64[k] if data.f32 == NULL else data.f32[k]


cdef inline double dense_dot(const double* a, const double* b, Py_ssize_t n) noexcept nogil:
    cdef double acc = 0.0
    cdef Py_ssize_t k
    for k in range(n):
        acc += a[k] * b[k]
    return acc


cdef inline void dense_axpy(double alpha, const double* x, double* y, Py_ssize_t n) noexcept nogil:
    cdef Py_ssize_t k
    for k in range(n):
        y[k] += alpha * x[k]
