# Exact Euclidean projection onto the l1 ball, callable from nogil kernels.

cdef void project_l1_ball(double* w, Py_ssize_t n, double radius, double* work) noexcept nogil
