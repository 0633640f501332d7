# Losses of one ordinal comparison "d(i, j) < d(l, k)" as functions of the two squared
# distances a = d^2(i, j) (should be the smaller) and c = d^2(l, k) (paper 000, Sec. 1.4 of the
# note).  ``loss_grad`` returns the loss and writes its partial derivatives with respect to a
# and c; the gradient with respect to the points follows from the chain rule in the kernels:
#   grad x_i += 2 g_a (x_i - x_j), grad x_j -= 2 g_a (x_i - x_j),
#   grad x_l += 2 g_c (x_l - x_k), grad x_k -= 2 g_c (x_l - x_k).

cdef class ComparisonLoss:
    cdef double loss_grad(self, double a, double c, double* g_a, double* g_c) noexcept nogil
    cdef void grad(self, double a, double c, double* g_a, double* g_c) noexcept nogil


cdef class GNMDSLoss(ComparisonLoss):
    cdef readonly double margin


cdef class STELoss(ComparisonLoss):
    pass


cdef class TSTELoss(ComparisonLoss):
    cdef readonly double alpha


cdef class CKLLoss(ComparisonLoss):
    cdef readonly double mu


cdef class SOELoss(ComparisonLoss):
    cdef readonly double margin
