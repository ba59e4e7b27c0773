"""Sphinx configuration of jaxrank's API reference.

Build (as CI does): ``python -m sphinx -W --keep-going -b html docs/api docs/api/_build/html``.
The metric page, the trec_eval measure page and the command line's help are generated at build
time from the code (``apigen.py``, into ``_generated/``); the build fails when a public name has
no entry (``apigen._check``).
"""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(os.path.dirname(HERE))]  # apigen; this checkout's jaxrank
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jaxrank  # noqa: E402  (after sys.path names this checkout)

project = "jaxrank"
author = "jaxrank authors"
copyright = "jaxrank authors"
release = version = jaxrank.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "apigen",
]
exclude_patterns = ["_build"]
templates_path: list[str] = []

# Docstrings: Google style (Args/Returns/Example) with reStructuredText roles and math. The metric
# functions and the option-taking faces add an "Options:" section (jaxrank._core.options).
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_custom_sections = [("Options", "params_style")]
napoleon_use_rtype = False

autodoc_typehints = "signature"
autodoc_member_order = "bysource"
add_module_names = False
python_maximum_signature_line_length = 100
# References to private modules and to other projects' types are left unresolved (plain text).
nitpicky = False

html_theme = "alabaster"
html_title = f"jaxrank {release} API"
html_static_path: list[str] = []
html_theme_options = {"description": "Ranking-evaluation metrics as JAX kernels, exact under ties.",
                      "page_width": "1200px", "sidebar_width": "240px"}
