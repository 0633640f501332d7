# One way to read rows of dense C-contiguous and CSR matrices.
#
# A row is (data pointer, indices pointer, nnz).  Dense rows have indices == NULL and
# nnz == n_features, so the helpers below run a contiguous loop for them and an indexed
# loop for sparse rows; every kernel reads rows through ``dataset_row`` and never
# branches on the storage itself.
from libc.stdint cimport int32_t, int64_t

ctypedef struct rows_t:
    const double* data
    const int32_t* indices    # NULL for dense storage
    const int64_t* indptr     # NULL for dense storage
    Py_ssize_t n_samples
    Py_ssize_t n_features


cdef class RowDataset:
    cdef rows_t rows
    cdef readonly bint is_sparse
    cdef object _keepalive    # the arrays rows_t points into


cdef inline int dataset_row(const rows_t* X, Py_ssize_t i, const double** data,
                            const int32_t** indices) noexcept nogil:
    """Point ``data``/``indices`` at row i and return its number of stored entries."""
    cdef int64_t start
    if X.indptr == NULL:
        data[0] = X.data + i * X.n_features
        indices[0] = NULL
        return <int>X.n_features
    start = X.indptr[i]
    data[0] = X.data + start
    indices[0] = X.indices + start
    return <int>(X.indptr[i + 1] - start)


cdef inline double row_dot(const double* data, const int32_t* indices, int nnz,
                           const double* w) noexcept nogil:
    """<row, w> for a dense or sparse row."""
    cdef double acc = 0.0
    cdef int k
    if indices == NULL:
        for k in range(nnz):
            acc += data[k] * w[k]
    else:
        for k in range(nnz):
            acc += data[k] * w[indices[k]]
    return acc


cdef inline void row_axpy(double a, const double* data, const int32_t* indices, int nnz,
                          double* w) noexcept nogil:
    """w += a * row."""
    cdef int k
    if indices == NULL:
        for k in range(nnz):
            w[k] += a * data[k]
    else:
        for k in range(nnz):
            w[indices[k]] += a * data[k]


cdef inline double row_sqnorm(const double* data, int nnz) noexcept nogil:
    """||row||^2 (stored entries only, so it is the same for dense and sparse rows)."""
    cdef double acc = 0.0
    cdef int k
    for k in range(nnz):
        acc += data[k] * data[k]
    return acc


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
