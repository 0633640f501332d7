# Margin losses shared by every linear kernel (CGVR, S3GD, S3VM's linear head, ...).
#
# p is the prediction x.w + b, y the target (+1/-1 for classification losses).
# dloss and d2loss are derivatives with respect to p.

cdef class MarginLoss:
    cdef double loss(self, double p, double y) noexcept nogil
    cdef double dloss(self, double p, double y) noexcept nogil
    cdef double d2loss(self, double p, double y) noexcept nogil


cdef class LogLoss(MarginLoss):
    pass


cdef class SquaredHinge(MarginLoss):
    cdef readonly double threshold


cdef class Hinge(MarginLoss):
    cdef readonly double threshold


cdef class SmoothHinge(MarginLoss):
    cdef readonly double gamma


cdef class SquaredError(MarginLoss):
    pass
