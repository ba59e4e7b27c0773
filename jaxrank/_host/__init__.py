"""Host-side (NumPy) paths into the rank core: the padding and batching policy (``batches``),
the host ranker (``ranks``), scoring ranks on the core (``scoring``), the NumPy door's padded
kernel calls (``kernels``), and compiled kernels kept on disk (``executables``)."""
