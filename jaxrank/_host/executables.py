"""Compiled kernels kept on disk as serialized XLA executables, for the ``jaxrank`` command.

JAX's persistent compilation cache (which the command also turns on) saves XLA's compile, but
every new process still traces the kernel and lowers it to find the cache entry: a few tenths of
a second per shape, most of a small evaluation's time. Here a kernel call is looked up by
everything that shapes its executable, and the executable is loaded and called directly:

``key = sha256(jax and jaxlib versions, the backend and its devices, jaxrank's source, the
function, its static arguments, the shapes and dtypes of its arguments, the x64 flag)``

so any change to the code or the environment is a new entry (never a stale kernel). Entries
are written atomically (a temporary file, then a rename), so concurrent commands share a
directory; one that cannot be read or loaded is compiled again and rewritten, and a directory
that cannot be written costs nothing but the saving. Off (a plain call) until
:func:`use_directory` names a directory.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

_DIRECTORY: str | None = None
_LOADED: dict[str, Any] = {}  # key -> executable, within this process


def use_directory(path: str | None) -> None:
  """Keeps executables in ``path`` (created if needed); ``None`` turns it off."""
  global _DIRECTORY
  _DIRECTORY = path


def _source_digest() -> str:
  """A digest of jaxrank's own source files, every subpackage included (an edit is a new key)."""
  package = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  digest = hashlib.sha256()
  for folder, subfolders, files in sorted(os.walk(package)):
    subfolders.sort()
    for name in sorted(files):
      if name.endswith(".py"):
        path = os.path.join(folder, name)
        with open(path, "rb") as f:
          digest.update(os.path.relpath(path, package).encode() + b"\0" + f.read())
  return digest.hexdigest()


_SOURCE: list[str] = []  # computed on first use


def _key(fn: Callable, args: tuple, static: dict) -> str:
  if not _SOURCE:
    _SOURCE.append(_source_digest())
  import jaxlib

  devices = jax.devices()
  leaves = [None if a is None else (np.shape(a), str(np.asarray(a).dtype))
            for a in jax.tree_util.tree_leaves(args, is_leaf=lambda x: x is None)]
  parts = (jax.__version__, jaxlib.__version__, devices[0].platform,
           tuple(d.device_kind for d in devices), _SOURCE[0], fn.__module__,
           getattr(fn, "__qualname__", repr(fn)), repr(sorted(static.items())),
           repr(jax.tree_util.tree_structure(args, is_leaf=lambda x: x is None)), repr(leaves),
           bool(jax.config.jax_enable_x64))
  return hashlib.sha256(repr(parts).encode()).hexdigest()


def call(fn: Callable, *args: Any, **static: Any) -> Any:
  """``fn(*args, **static)`` for a ``jax.jit`` function whose keyword arguments are its static
  ones: from the executable kept on disk when there is one (see the module docstring)."""
  if _DIRECTORY is None:
    return fn(*args, **static)
  key = _key(fn, args, static)
  exe = _LOADED.get(key)
  if exe is None:
    if os.path.exists(_path(key, _PLAIN)):  # does not serialize: JAX's own caches
      return fn(*args, **static)
    exe = _load(key)
    if exe is None:
      exe = _compile(fn, args, static)
      _save(key, exe)
    _LOADED[key] = exe
  return exe(*args)


def _compile(fn: Callable, args: tuple, static: dict) -> Any:
  """Compiles outside JAX's persistent cache: an executable loaded from there serializes
  without the code of its fused functions (jax 0.10: "Function ... not found" when called)."""
  before = jax.config.jax_enable_compilation_cache
  jax.config.update("jax_enable_compilation_cache", False)
  try:
    return fn.lower(*args, **static).compile()
  finally:
    jax.config.update("jax_enable_compilation_cache", before)


_EXECUTABLE, _PLAIN = ".xla", ".plain"  # an executable; a marker: call the function as it is


def _path(key: str, kind: str = _EXECUTABLE) -> str:
  return os.path.join(_DIRECTORY, key + kind)


def _load(key: str) -> Any:
  from jax.experimental.serialize_executable import deserialize_and_load

  try:
    with open(_path(key), "rb") as f:
      payload, in_tree, out_tree = pickle.load(f)
    return deserialize_and_load(payload, in_tree, out_tree)
  except Exception:  # noqa: BLE001 - absent, unreadable or from elsewhere: compile it again
    return None


def _save(key: str, exe: Any) -> None:
  """Writes ``exe`` under ``key``; one XLA cannot serialize (in-process, a computation compiled
  before can make a later one unserializable) gets a marker instead, so later processes call
  the function as it is (JAX's persistent cache, no tracing saved) rather than compile it."""
  from jax.experimental.serialize_executable import serialize

  try:
    os.makedirs(_DIRECTORY, exist_ok=True)
    try:
      data, kind = pickle.dumps(serialize(exe)), _EXECUTABLE
    except Exception:  # noqa: BLE001 - XLA: "... is not serializable"
      data, kind = b"", _PLAIN
    fd, tmp = tempfile.mkstemp(dir=_DIRECTORY, prefix=".tmp-", suffix=kind)
    try:
      with os.fdopen(fd, "wb") as f:
        f.write(data)
      os.replace(tmp, _path(key, kind))
      if kind == _PLAIN and os.path.exists(_path(key)):
        os.remove(_path(key))  # the entry that could not be loaded
    except BaseException:
      os.unlink(tmp)
      raise
  except Exception:  # noqa: BLE001 - a read-only or full directory: no saving, no error
    pass
