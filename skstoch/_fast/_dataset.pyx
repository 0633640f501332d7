"""Row datasets over dense C-contiguous and CSR float64 or float32 matrices.

Build them with :func:`skstoch.utils.make_dataset`, which validates the input; the
constructor here trusts its arguments (kernels run without bounds checks).
"""
import numpy as np

from libc.stdint cimport int32_t, int64_t

from ._dataset cimport rowvals_t, dataset_row, row_dot, row_axpy, row_sqnorm


cdef class RowDataset:
    """Rows of a dense (C-contiguous) or CSR matrix behind one interface.

    Parameters
    ----------
    data : ndarray of float64 or float32
        Dense: the C-contiguous (n_samples, n_features) matrix.  CSR: ``X.data``.  float32
        values are read in place (the kernels widen each one to double as they use it).
    indices, indptr : ndarray of int32 / int64, or None
        CSR structure (None for dense input).
    n_features : int
        Number of columns.
    """

    def __cinit__(self, data, indices, indptr, Py_ssize_t n_features):
        cdef const double[::1] flat
        cdef const float[::1] flat32
        cdef const int32_t[::1] ind
        cdef const int64_t[::1] ptr
        data = np.asarray(data)
        self.is_sparse = indptr is not None
        self.rows.data = NULL
        self.rows.data32 = NULL
        if data.dtype == np.float32:
            flat32 = data.reshape(-1)
            self.rows.data32 = &flat32[0] if flat32.shape[0] > 0 else NULL
        else:
            flat = data.reshape(-1)
            self.rows.data = &flat[0] if flat.shape[0] > 0 else NULL
        if self.is_sparse:
            ind = indices
            ptr = indptr
            self.rows.n_samples = ptr.shape[0] - 1
            self.rows.indices = &ind[0] if ind.shape[0] > 0 else NULL
            self.rows.indptr = &ptr[0]
            self._keepalive = (data, indices, indptr)
        else:
            self.rows.n_samples = data.shape[0]
            self.rows.indices = NULL
            self.rows.indptr = NULL
            self._keepalive = (data,)
        self.rows.n_features = n_features

    @property
    def dtype(self):
        """The dtype of the stored values (float64 or float32)."""
        return self._keepalive[0].dtype

    def require_float64(self, what):
        """Raise TypeError unless the rows are stored as float64 (``what`` reads only those)."""
        if self.rows.data32 != NULL:
            raise TypeError(f"{what} read float64 rows; this dataset stores float32")

    @property
    def n_samples(self):
        return self.rows.n_samples

    @property
    def n_features(self):
        return self.rows.n_features

    def __reduce__(self):
        data, indices, indptr = (self._keepalive + (None, None))[:3]
        return (RowDataset, (data, indices, indptr, self.rows.n_features))

    def _check_index(self, Py_ssize_t i):
        if not 0 <= i < self.rows.n_samples:
            raise IndexError(f"row {i} out of range for {self.rows.n_samples} rows")

    def _check_length(self, Py_ssize_t n):
        """ValueError unless a coefficient vector of length n matches the features."""
        if n != self.rows.n_features:
            raise ValueError("w has the wrong length")

    def py_row(self, Py_ssize_t i):
        """Row i as ``(values, column_indices)`` copies (test hook)."""
        self._check_index(i)
        cdef rowvals_t data
        cdef const int32_t* indices
        cdef int nnz = dataset_row(&self.rows, i, &data, &indices)
        if nnz == 0:
            values = np.empty(0, dtype=self.dtype)
        elif data.f32 != NULL:
            values = np.array(<const float[:nnz]> data.f32)
        else:
            values = np.array(<const double[:nnz]> data.f64)
        if indices == NULL:
            cols = np.arange(nnz, dtype=np.int32)
        elif nnz > 0:
            cols = np.array(<const int32_t[:nnz]> indices)
        else:
            cols = np.empty(0, dtype=np.int32)
        return values, cols

    def py_dot(self, Py_ssize_t i, const double[::1] w):
        """<x_i, w> through the kernel helper (test hook)."""
        self._check_index(i)
        self._check_length(w.shape[0])
        cdef rowvals_t data
        cdef const int32_t* indices
        cdef int nnz = dataset_row(&self.rows, i, &data, &indices)
        return row_dot(data, indices, nnz, &w[0])

    def py_axpy(self, Py_ssize_t i, double a, double[::1] w):
        """w += a x_i in place through the kernel helper (test hook)."""
        self._check_index(i)
        self._check_length(w.shape[0])
        cdef rowvals_t data
        cdef const int32_t* indices
        cdef int nnz = dataset_row(&self.rows, i, &data, &indices)
        row_axpy(a, data, indices, nnz, &w[0])

    def py_sqnorm(self, Py_ssize_t i):
        """||x_i||^2 through the kernel helper (test hook)."""
        self._check_index(i)
        cdef rowvals_t data
        cdef const int32_t* indices
        cdef int nnz = dataset_row(&self.rows, i, &data, &indices)
        return row_sqnorm(data, nnz)

    def margins(self, const double[::1] w, double intercept=0.0):
        """X @ w + intercept for all rows in one nogil pass."""
        self._check_length(w.shape[0])
        out = np.empty(self.rows.n_samples)
        self.margins_into(w, intercept, out, 0, self.rows.n_samples)
        return out

    def arrays(self):
        """The arrays the rows are read from, without a copy: ``(X,)`` for dense rows (the
        C-contiguous float64 or float32 matrix), ``(data, indices, indptr)`` for CSR rows."""
        return self._keepalive

    @property
    def n_stored(self):
        """Number of stored entries (n_samples * n_features for dense rows)."""
        if self.is_sparse:
            return int(self._keepalive[2][self.rows.n_samples])
        return self.rows.n_samples * self.rows.n_features

    def margins_into(self, const double[::1] w, double intercept, double[::1] out,
                     Py_ssize_t start, Py_ssize_t end):
        """``out[start:end] = X[start:end] @ w + intercept`` (nogil; a row block of
        :meth:`margins`, so that blocks can run in threads)."""
        self._check_block(w.shape[0], out.shape[0], start, end)
        cdef rowvals_t data
        cdef const int32_t* indices
        cdef const double* wp = &w[0] if w.shape[0] > 0 else NULL
        cdef int nnz
        cdef Py_ssize_t i
        with nogil:
            for i in range(start, end):
                nnz = dataset_row(&self.rows, i, &data, &indices)
                out[i] = row_dot(data, indices, nnz, wp) + intercept

    def add_transpose_product(self, const double[::1] r, double[::1] out, Py_ssize_t start,
                              Py_ssize_t end):
        """``out += X[start:end].T @ r[start:end]`` (nogil; rows in order, so one block's
        result does not depend on the others)."""
        self._check_block(out.shape[0], r.shape[0], start, end)
        cdef rowvals_t data
        cdef const int32_t* indices
        cdef double* op = &out[0] if out.shape[0] > 0 else NULL
        cdef int nnz
        cdef Py_ssize_t i
        with nogil:
            for i in range(start, end):
                nnz = dataset_row(&self.rows, i, &data, &indices)
                row_axpy(r[i], data, indices, nnz, op)

    def _check_block(self, Py_ssize_t n_features, Py_ssize_t n_samples, Py_ssize_t start,
                     Py_ssize_t end):
        if n_features != self.rows.n_features:
            raise ValueError(f"expected a vector of {self.rows.n_features} features, "
                             f"got {n_features}")
        if n_samples != self.rows.n_samples:
            raise ValueError(f"expected a vector of {self.rows.n_samples} samples, "
                             f"got {n_samples}")
        if not 0 <= start <= end <= self.rows.n_samples:
            raise ValueError(f"row block [{start}, {end}) outside [0, {self.rows.n_samples}]")
