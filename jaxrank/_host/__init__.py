"""Host-side (NumPy) paths into the rank core: padding and batching of ragged input, the host
ranker, the jitted wrappers, and compiled kernels kept on disk."""
