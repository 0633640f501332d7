"""O(nnz) structural checks of CSR matrices, compiled (the input validation of every sparse
fit runs them: in NumPy they cost a few percent of a fit, all of it single-threaded)."""
from libc.stdint cimport int32_t, int64_t

ctypedef fused ptr_t:
    int32_t
    int64_t

ctypedef fused ind_t:
    int32_t
    int64_t


def csr_is_canonical(const ptr_t[:] indptr, const ind_t[:] indices):
    """True when the column indices of every row are strictly increasing (sorted, no
    duplicates).  ``indptr`` must already be checked: non-decreasing, within ``indices``."""
    cdef Py_ssize_t i, k, n_rows = indptr.shape[0] - 1
    cdef bint ok = True
    with nogil:
        for i in range(n_rows):
            for k in range(indptr[i] + 1, indptr[i + 1]):
                if indices[k] <= indices[k - 1]:
                    ok = False
                    break
            if not ok:
                break
    return ok
