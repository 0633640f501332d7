"""O(nnz) structural checks of CSR matrices, compiled (the input validation of every sparse
fit runs them: in NumPy they cost a few percent of a fit, all of it single-threaded)."""
from libc.stdint cimport int32_t, int64_t

ctypedef fused ptr_t:
    int32_t
    int64_t

ctypedef fused ind_t:
    int32_t
    int64_t


def csr_is_canonical(const ptr_t[::1] indptr, const ind_t[::1] indices):
    """True when the column indices of every row are strictly increasing (sorted, no
    duplicates).  ``indptr`` must already be checked: non-decreasing, within ``indices``."""
    cdef Py_ssize_t i, k, s, prev = 0, n_rows = indptr.shape[0] - 1
    cdef Py_ssize_t nnz = indices.shape[0]
    cdef Py_ssize_t falls = 0, at_starts = 0
    with nogil:
        # one branch-free pass over all pairs (it vectorizes; rows are short), then the pairs
        # that straddle a row start (each start position once: empty rows repeat it) are
        # taken back out
        for k in range(1, nnz):
            falls += indices[k] <= indices[k - 1]
        for i in range(1, n_rows):
            s = indptr[i]
            if s != prev and 0 < s < nnz:
                at_starts += indices[s] <= indices[s - 1]
            prev = s
    return falls == at_starts
