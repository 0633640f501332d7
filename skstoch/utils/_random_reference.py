"""Pure-Python reference of the kernels' counter-based generator (``_fast/_random.pxd``).

Slow and obvious: exact integer arithmetic on Python ints, the same floating-point
operations in the same order.  The tests require bitwise equality with the kernels.
"""
import math

MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


def mix64(z):
    z &= MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


class ReferenceStream:
    """Stream (seed, stream) from ``counter`` on."""

    def __init__(self, seed, stream, counter=0):
        self.key = mix64((mix64(seed) + (stream + 1) * GOLDEN) & MASK)
        self.counter = counter

    def u64(self):
        self.counter = (self.counter + 1) & MASK
        return mix64((self.key + self.counter * GOLDEN) & MASK)

    def uniform(self):
        return float(self.u64() >> 11) * (1.0 / 9007199254740992.0)

    def randint(self, n):
        threshold = (1 << 64) % n
        x = self.u64()
        while x < threshold:
            x = self.u64()
        return x % n

    def normal(self):
        while True:
            u = 2.0 * self.uniform() - 1.0
            v = 2.0 * self.uniform() - 1.0
            r = u * u + v * v
            if 0.0 < r < 1.0:
                return u * math.sqrt(-2.0 * portable_log(r) / r)


def portable_log(x):
    e = 0
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
