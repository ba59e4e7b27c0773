"""Test-session hygiene shared by every test file.

Every compiled XLA CPU executable keeps memory mappings of its own, and a long pytest process
compiles thousands of kernels (hypothesis draws many shapes): past the kernel's
``vm.max_map_count`` (65,530 by default) LLVM's next allocation fails and the process
segfaults inside a compilation. So each test module starts from empty JAX caches: what it
compiled is freed when it ends.
"""

from __future__ import annotations

import gc

import jax
import pytest


@pytest.fixture(autouse=True, scope="module")
def _fresh_jax_caches():
  yield
  jax.clear_caches()
  gc.collect()
