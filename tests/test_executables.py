"""jaxrank._host.executables: the command's evaluation kernels kept on disk as XLA executables, keyed
by everything that shapes them, loaded without tracing; never a stale or a failed kernel."""

import functools
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrank._host import executables as _executables


@functools.partial(jax.jit, static_argnames=("scale",))
def _kernel(x, y=None, *, scale):
  out = jnp.sort(x) * scale + jnp.argsort(-x)
  return out if y is None else (out, y.sum())


def _reference(x, scale):
  x = np.asarray(x)
  return np.sort(x) * scale + np.argsort(-x, kind="stable")


@pytest.fixture
def directory(tmp_path):
  _executables.use_directory(str(tmp_path / "exe"))
  yield tmp_path / "exe"
  _executables.use_directory(None)
  _executables._LOADED.clear()


def test_off_is_a_plain_call():
  x = np.array([3.0, 1.0, 2.0])
  np.testing.assert_array_equal(_executables.call(_kernel, x, scale=2), _kernel(x, scale=2))


def test_kept_loaded_and_keyed_by_what_shapes_them(directory):
  x, y = np.array([3.0, 1.0, 2.0]), np.arange(4, dtype=np.int32)
  expected = _reference(x, 2)
  np.testing.assert_array_equal(_executables.call(_kernel, x, scale=2), expected)
  (first,) = os.listdir(directory)
  _executables._LOADED.clear()  # as a new process: from the file
  np.testing.assert_array_equal(_executables.call(_kernel, x, scale=2), expected)
  assert os.listdir(directory) == [first]
  # a static argument, a shape, a dtype, a None leaf: each its own executable
  np.testing.assert_array_equal(_executables.call(_kernel, x, scale=3), _reference(x, 3))
  np.testing.assert_array_equal(_executables.call(_kernel, x[:2], scale=2),
                                _reference(x[:2], 2))
  np.testing.assert_array_equal(_executables.call(_kernel, x.astype(np.float32), scale=2),
                                _reference(x, 2))
  out, total = _executables.call(_kernel, x, y, scale=2)
  np.testing.assert_array_equal(out, expected)
  assert int(total) == 6
  assert len(os.listdir(directory)) == 5


def test_damaged_or_unwritable_costs_time_never_a_result(directory, tmp_path):
  x = np.array([2.0, 5.0])
  expected = _reference(x, 1)
  _executables.call(_kernel, x, scale=1)
  (name,) = os.listdir(directory)
  (directory / name).write_bytes(b"garbage")
  _executables._LOADED.clear()
  np.testing.assert_array_equal(_executables.call(_kernel, x, scale=1), expected)
  # rewritten; or (XLA will not serialize a computation compiled before in this process) gone,
  # with a marker sending later processes JAX's own way
  assert not (directory / name).exists() or (directory / name).read_bytes() != b"garbage"
  assert os.listdir(directory) in ([name], [name.replace(".xla", ".plain")])
  _executables._LOADED.clear()
  np.testing.assert_array_equal(_executables.call(_kernel, x, scale=1), expected)
  blocked = tmp_path / "file"
  blocked.write_text("")
  _executables.use_directory(str(blocked / "exe"))  # cannot be created
  _executables._LOADED.clear()
  np.testing.assert_array_equal(_executables.call(_kernel, x, scale=1), expected)


def test_what_does_not_serialize_is_called_as_it_is(directory, monkeypatch):
  from jax.experimental import serialize_executable

  def refuse(exe):
    raise RuntimeError("UNIMPLEMENTED: `LessThan` is not serializable.")

  monkeypatch.setattr(serialize_executable, "serialize", refuse)
  x = np.array([4.0, 1.0, 6.0])
  np.testing.assert_array_equal(_executables.call(_kernel, x, scale=5), _reference(x, 5))
  (marker,) = os.listdir(directory)
  assert marker.endswith(".plain")
  _executables._LOADED.clear()  # a later process: JAX's own path, no compiling here
  monkeypatch.setattr(_executables, "_compile", lambda *a: pytest.fail("compiled again"))
  np.testing.assert_array_equal(_executables.call(_kernel, x, scale=5), _reference(x, 5))


def test_an_executable_from_another_process_runs(directory):
  """Loaded in a fresh process (compiled outside JAX's persistent cache, which this one has on:
  an executable loaded from there would not serialize whole)."""
  code = (
      "import sys, numpy as np, jax; sys.path.insert(0, sys.argv[2]);"
      "jax.config.update('jax_compilation_cache_dir', sys.argv[1] + '-jax');"
      "jax.config.update('jax_persistent_cache_min_compile_time_secs', 0.0);"
      "from jaxrank import _executables; from test_executables import _kernel;"
      "_executables.use_directory(sys.argv[1]);"
      "print(_executables.call(_kernel, np.array([3.0, 1.0, 2.0]), scale=2).tolist())")
  runs = [subprocess.run([sys.executable, "-c", code, str(directory), os.path.dirname(__file__)],
                         capture_output=True, text=True, timeout=300) for _ in range(3)]
  assert [(r.returncode, r.stdout) for r in runs] == [(0, "[2.0, 6.0, 7.0]\n")] * 3, runs[-1].stderr
  assert len(os.listdir(directory)) == 1
