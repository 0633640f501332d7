"""Cython kernels of skstoch (private).

Kernels never validate user input: the Python layer does, because they run with bounds checks off.
"""
