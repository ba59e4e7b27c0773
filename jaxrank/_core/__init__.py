"""The rank core: input checks, options, the internal :class:`Ranks` form and the JAX kernels
that build it, the metric formulas (on JAX arrays under ``jit``, or on NumPy arrays on the host
without importing JAX), the metric table, metric names, and the one compute dispatch behind every
public metric. Nothing here imports another layer of jaxrank."""
