"""The rank core (JAX only): input checks, options, the internal :class:`Ranks` form and the
kernels that build it, the metric formulas, the metric table, metric names, and the one compute
dispatch behind every public metric. Nothing here imports another layer of jaxrank."""
