"""jaxrank's version, in one place (``jaxrank.__version__``, ``jaxrank --version``)."""

__version__ = "0.1.0"
