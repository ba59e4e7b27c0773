"""jaxrank._host.executables: the command's evaluation kernels kept on disk as XLA executables, keyed
by everything that shapes them, loaded without tracing; never a stale or a failed kernel, never
an entry someone else could have written, never a damaged or misplaced one."""

import functools
import json
import os
import pickle
import random
import stat
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxrank._host import cache as _cache
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
  _cache._WARNED.clear()
  assert _cache.use_directory(str(tmp_path / "exe"))
  yield tmp_path / "exe"
  _cache.use_directory(None)
  _cache._WARNED.clear()


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
  # rewritten: as an executable, or (XLA will not serialize a computation compiled before in
  # this process) as a plain entry sending later processes JAX's own way
  assert os.listdir(directory) == [name] and (directory / name).read_bytes() != b"garbage"
  _executables._LOADED.clear()
  np.testing.assert_array_equal(_executables.call(_kernel, x, scale=1), expected)
  blocked = tmp_path / "file"
  blocked.write_text("")
  assert not _cache.use_directory(str(blocked / "exe"))  # cannot be created: silently
  np.testing.assert_array_equal(_executables.call(_kernel, x, scale=1), expected)


def test_what_does_not_serialize_is_called_as_it_is(directory, monkeypatch):
  from jax.experimental import serialize_executable

  def refuse(exe):
    raise RuntimeError("UNIMPLEMENTED: `LessThan` is not serializable.")

  monkeypatch.setattr(serialize_executable, "serialize", refuse)
  x = np.array([4.0, 1.0, 6.0])
  np.testing.assert_array_equal(_executables.call(_kernel, x, scale=5), _reference(x, 5))
  (marker,) = os.listdir(directory)
  assert _header((directory / marker).read_bytes())["kind"] == "plain"
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
      "from jaxrank._host import cache as _cache, executables as _executables;"
      "from test_executables import _kernel;"
      "_cache.use_directory(sys.argv[1]);"
      "print(_executables.call(_kernel, np.array([3.0, 1.0, 2.0]), scale=2).tolist())")
  runs = [subprocess.run([sys.executable, "-c", code, str(directory), os.path.dirname(__file__)],
                         capture_output=True, text=True, timeout=300) for _ in range(3)]
  assert [(r.returncode, r.stdout) for r in runs] == [(0, "[2.0, 6.0, 7.0]\n")] * 3, runs[-1].stderr
  assert len(os.listdir(directory)) == 1


# --- safety: only entries nobody else can have written are read --------------------------------

OTHER_UID = 12345  # another user (the tests run as root in CI: chown simulates one)
needs_owners = pytest.mark.skipif(not hasattr(os, "getuid") or os.getuid() != 0,
                                  reason="chown to another user needs root")


class _Planted:
  """What a malicious entry's payload does when unpickled: here, create the file ``marker``."""

  def __init__(self, marker):
    self.marker = str(marker)

  def __reduce__(self):
    return (open, (self.marker, "w"))


def _header(data):
  start = len(_executables.MAGIC) + 32
  return json.loads(data[start:].split(b"\n", 1)[0])


def _well_formed_evil(data, marker):
  """``data``'s entry with its executable replaced by a planted pickle, its key and sha256 right
  (the sha256 is no secret): only the ownership rules keep it out."""
  tree = jax.tree_util.tree_structure((1,)).serialize_using_proto()  # any: read after the payload
  return _executables.encode(_header(data)["key"], "executable",
                             (tree, tree, pickle.dumps(_Planted(marker))))


_LENGTHS = iter(range(100, 10_000))


def _fresh():
  """An input of a shape no other test compiled: XLA serializes only the first compile of a
  computation in a process (a later one: "`LessThan` is not serializable")."""
  return np.random.default_rng(0).permutation(next(_LENGTHS)).astype(np.float64)


def _one_entry(directory, x):
  """The name and bytes of the entry a first call of ``_kernel(x, scale=2)`` writes."""
  np.testing.assert_array_equal(_executables.call(_kernel, x, scale=2), _reference(x, 2))
  (name,) = os.listdir(directory)
  return name, (directory / name).read_bytes()


def _warnings(err):
  return [line for line in err.splitlines() if line.startswith("jaxrank: warning:")]


@pytest.mark.parametrize("case", ["world-writable", "group-writable", "another user's",
                                  "a symbolic link"])
def test_a_directory_someone_else_can_write_is_not_used(directory, tmp_path, capsys, case):
  x, marker = _fresh(), tmp_path / "ran"
  name, data = _one_entry(directory, x)
  (directory / name).write_bytes(_well_formed_evil(data, marker))
  path = directory
  if case == "world-writable":
    directory.chmod(0o777)
  elif case == "group-writable":
    directory.chmod(0o770)
  elif case == "a symbolic link":
    path = tmp_path / "link"
    path.symlink_to(directory)
  else:
    if not hasattr(os, "getuid") or os.getuid() != 0:
      pytest.skip("chown to another user needs root")
    os.chown(directory, OTHER_UID, -1)
  capsys.readouterr()
  assert not _cache.use_directory(str(path))
  np.testing.assert_array_equal(_executables.call(_kernel, x, scale=2), _reference(x, 2))
  np.testing.assert_array_equal(_executables.call(_kernel, x, scale=3), _reference(x, 3))
  assert not marker.exists()
  assert os.listdir(directory) == [name]  # nothing written there either
  (line,) = _warnings(capsys.readouterr().err)
  assert line.startswith(f"jaxrank: warning: not using cache directory {path}: ")
  assert line.endswith("; compiling without it")


@pytest.mark.parametrize("case", ["another user's", "group-writable", "a symbolic link",
                                  "a directory"])
def test_an_entry_someone_else_can_write_is_skipped(directory, tmp_path, capsys, case):
  x, marker = _fresh(), tmp_path / "ran"
  name, data = _one_entry(directory, x)
  entry, evil = directory / name, _well_formed_evil(data, marker)
  if case == "a symbolic link":
    target = tmp_path / "elsewhere.xla"
    target.write_bytes(evil)
    entry.unlink()
    entry.symlink_to(target)
  elif case == "a directory":
    entry.unlink()
    entry.mkdir()
  else:
    entry.write_bytes(evil)
    if case == "group-writable":
      entry.chmod(0o620)
    elif not hasattr(os, "getuid") or os.getuid() != 0:
      pytest.skip("chown to another user needs root")
    else:
      os.chown(entry, OTHER_UID, -1)
  capsys.readouterr()
  for _ in range(2):  # the warning comes once per process
    _executables._LOADED.clear()
    np.testing.assert_array_equal(_executables.call(_kernel, x, scale=2), _reference(x, 2))
  assert not marker.exists()
  (line,) = _warnings(capsys.readouterr().err)
  assert line.startswith(f"jaxrank: warning: not using cache entry {entry}: ")
  if case == "a symbolic link":
    assert target.read_bytes() == evil  # not written through
  if case != "a directory":  # compiled again and rewritten as our own: regular, 0600
    st = os.lstat(entry)
    assert stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600
    assert _executables.decode(entry.read_bytes(), _header(data)["key"]) is not None


@pytest.mark.parametrize("umask", [0o000, 0o022, 0o277])
def test_directories_are_made_private_whatever_the_umask(tmp_path, umask):
  _cache._WARNED.clear()
  before = os.umask(umask)
  try:
    assert _cache.use_directory(str(tmp_path / "a" / "b" / "exe"))
    x = _fresh()
    np.testing.assert_array_equal(_executables.call(_kernel, x, scale=1), _reference(x, 1))
  finally:
    os.umask(before)
    _cache.use_directory(None)
  for path in (tmp_path / "a", tmp_path / "a" / "b", tmp_path / "a" / "b" / "exe"):
    assert stat.S_IMODE(path.stat().st_mode) == 0o700, path
  (entry,) = (tmp_path / "a" / "b" / "exe").iterdir()
  assert stat.S_IMODE(entry.stat().st_mode) == 0o600
  assert not _cache._WARNED


def test_every_flipped_bit_and_every_other_key_is_a_miss(directory):
  """The sha256 covers the header and the payload, the header the full key: a damaged or
  misplaced entry is never deserialised (a flipped bit there crashed XLA: SIGILL, SIGSEGV)."""
  name, data = _one_entry(directory, _fresh())
  key = _header(data)["key"]
  assert _executables.decode(data, key)[0] == "executable"
  header = len(_executables.MAGIC) + 32 + data[len(_executables.MAGIC) + 32:].index(b"\n") + 1
  rng = random.Random(0)
  bits = list(range(8 * header)) + rng.sample(range(8 * header, 8 * len(data)), 400)
  for bit in bits:
    flipped = bytearray(data)
    flipped[bit // 8] ^= 1 << (bit % 8)
    assert _executables.decode(bytes(flipped), key) is None, bit
  assert _executables.decode(data[:-1], key) is None and _executables.decode(b"", key) is None
  other = json.loads(key)
  other["static"]["scale"] = "3"
  assert _executables.decode(data, json.dumps(other, sort_keys=True, separators=(",", ":"))) is None


def test_a_swapped_entry_is_a_miss(directory, monkeypatch):
  from jax.experimental import serialize_executable

  x = _fresh()
  _executables.call(_kernel, x, scale=2)
  (two,) = os.listdir(directory)
  _executables.call(_kernel, x, scale=3)
  (three,) = set(os.listdir(directory)) - {two}
  (directory / three).write_bytes((directory / two).read_bytes())
  loads = []
  real = serialize_executable.deserialize_and_load
  monkeypatch.setattr(serialize_executable, "deserialize_and_load",
                      lambda *a, **k: loads.append(1) or real(*a, **k))
  _executables._LOADED.clear()
  np.testing.assert_array_equal(_executables.call(_kernel, x, scale=3), _reference(x, 3))
  assert loads == []  # never deserialised: another key's entry


@pytest.mark.parametrize("case", ["another user's", "group-writable", "a symbolic link", "a FIFO",
                                  "world-writable lock"])
def test_jax_cache_with_an_entry_someone_else_can_write_is_not_used(tmp_path, capsys, case):
  """JAX's persistent cache (the cache root) reads KEY-cache files following links, blocking on
  a FIFO: the command turns it on (and its own) only when each is a regular file of the user's."""
  from jaxrank import cli

  root = tmp_path / "cache"
  root.mkdir(mode=0o755)
  (root / "unrelated-file").symlink_to(tmp_path)  # not JAX's: JAX never opens it
  entry = root / ("jit_f-0123-atime" if case == "group-writable" else "jit_f-0123-cache")
  if case == "a symbolic link":
    entry.symlink_to(tmp_path / "planted")
  elif case == "a FIFO":
    os.mkfifo(entry)
  elif case == "world-writable lock":
    entry = root / ".lockfile"
    entry.write_bytes(b"")
    entry.chmod(0o666)
  else:
    entry.write_bytes(b"planted")
    if case == "group-writable":
      entry.chmod(0o664)
    elif not hasattr(os, "getuid") or os.getuid() != 0:
      pytest.skip("chown to another user needs root")
    else:
      os.chown(entry, OTHER_UID, -1)
  _cache._WARNED.clear()
  try:
    assert not cli._use_compilation_cache(str(root))
    (line,) = _warnings(capsys.readouterr().err)
    assert line.startswith(f"jaxrank: warning: not using cache directory {root}: its entry "
                           f"{entry.name}")
    assert not (root / "executables").exists()
    # group- or world-writable files of the user's (JAX writes them so under umask 002 or 000)
    # are fine where nobody else can enter the directory
    if case in ("group-writable", "world-writable lock"):
      root.chmod(0o700)
      assert cli._unsafe_jax_entry(str(root)) is None
  finally:
    _cache._WARNED.clear()


def test_the_cache_root_may_be_a_link_to_a_private_directory(tmp_path):
  real = tmp_path / "real"
  real.mkdir(mode=0o700)
  (tmp_path / "link").symlink_to(real)
  assert _cache.check_directory(str(tmp_path / "link")) is None
  assert _cache.check_directory(str(tmp_path / "link"), follow=False) == (
      "it is a symbolic link")
  real.chmod(0o777)
  assert "writable by its group or others" in _cache.check_directory(str(tmp_path / "link"))
  (tmp_path / "file").write_text("")
  with pytest.raises(OSError):  # not a directory: no cache, silently
    _cache.check_directory(str(tmp_path / "file"))


# --- the command: a planted, linked, blocking, damaged or swapped entry -------------------------

def _evaluate(env_extra, *measures, umask=None, timeout=120):
  """`jaxrank evaluate --example -m MEASURE...` in a new process, scored by the compiled kernel
  (the example is small enough for the host's NumPy scoring, which keeps no executable)."""
  env = dict(os.environ, JAXRANK_SCORING="jax", **env_extra)
  args = [a for m in measures or ("map",) for a in ("-m", m)]
  return subprocess.run([sys.executable, "-m", "jaxrank.cli", "evaluate", "--example", *args],
                        capture_output=True, text=True, env=env, timeout=timeout,
                        umask=-1 if umask is None else umask)


@pytest.fixture(scope="module")
def learned(tmp_path_factory):
  """The uncached output of `-m map` on the example, and the entries a cache of it holds."""
  root = tmp_path_factory.mktemp("learned")
  plain = _evaluate({"JAXRANK_CACHE": "off"})
  first = _evaluate({"JAXRANK_CACHE": str(root / "cache")})
  assert (first.returncode, first.stdout, first.stderr) == (0, plain.stdout, ""), first.stderr
  entries = {p.name: p.read_bytes() for p in (root / "cache" / "executables").iterdir()}
  assert entries
  return plain.stdout, entries


@pytest.mark.parametrize("case", ["a world-writable directory", "another user's directory",
                                  "another user's entry"])
def test_the_command_never_runs_a_planted_entry(tmp_path, learned, case):
  """Reproduces the report: a pickle planted in ``D/executables`` ran on the next evaluate."""
  expected, entries = learned
  cache, marker = tmp_path / "cache", tmp_path / "ran"
  (cache / "executables").mkdir(parents=True)
  for name, data in entries.items():
    # the form the report planted (any pickle) where only the directory's rules can stop it
    planted = (pickle.dumps(_Planted(marker)) if case == "a world-writable directory"
               else _well_formed_evil(data, marker))
    (cache / "executables" / name).write_bytes(planted)
  if case == "a world-writable directory":
    cache.chmod(0o777)
    (cache / "executables").chmod(0o777)
  elif not hasattr(os, "getuid") or os.getuid() != 0:
    pytest.skip("chown to another user needs root")
  elif case == "another user's directory":
    os.chown(cache, OTHER_UID, -1)
  else:
    for name in entries:
      os.chown(cache / "executables" / name, OTHER_UID, -1)
  done = _evaluate({"JAXRANK_CACHE": str(cache)})
  assert (done.returncode, done.stdout) == (0, expected), done.stderr
  assert not marker.exists()
  assert len(_warnings(done.stderr)) == 1 and done.stderr.count("\n") == 1, done.stderr


def test_the_command_neither_writes_through_a_link_nor_waits_on_a_fifo(tmp_path, learned):
  expected, entries = learned
  cache, elsewhere = tmp_path / "cache", tmp_path / "elsewhere"
  cache.mkdir(mode=0o700)
  elsewhere.mkdir(mode=0o700)
  (cache / "executables").symlink_to(elsewhere)
  done = _evaluate({"JAXRANK_CACHE": str(cache)})
  assert (done.returncode, done.stdout) == (0, expected), done.stderr
  assert _warnings(done.stderr) == [f"jaxrank: warning: not using cache directory "
                                    f"{cache / 'executables'}: it is a symbolic link; "
                                    f"compiling without it"]
  assert os.listdir(elsewhere) == []
  (cache / "executables").unlink()
  (cache / "executables").mkdir(mode=0o700)
  for name in entries:
    os.mkfifo(cache / "executables" / name)
  done = _evaluate({"JAXRANK_CACHE": str(cache)}, timeout=60)  # blocked forever before
  assert (done.returncode, done.stdout) == (0, expected), done.stderr
  assert len(_warnings(done.stderr)) == 1 and "not a regular file" in done.stderr
  assert all(stat.S_ISREG(os.lstat(cache / "executables" / n).st_mode) for n in entries)


def test_the_command_makes_its_cache_private_under_umask_000(tmp_path, learned):
  expected, _ = learned
  home = tmp_path / "xdg"
  runs = [_evaluate({"XDG_CACHE_HOME": str(home)}, umask=0) for _ in range(2)]
  assert [(r.returncode, r.stdout, r.stderr) for r in runs] == [(0, expected, "")] * 2
  for path in (home, home / "jaxrank", home / "jaxrank" / "xla",
               home / "jaxrank" / "xla" / "executables"):
    assert stat.S_IMODE(path.stat().st_mode) == 0o700, path
  for entry in (home / "jaxrank" / "xla" / "executables").iterdir():
    assert stat.S_IMODE(entry.stat().st_mode) == 0o600, entry


_FLIPS = """
import contextlib, io, json, os, random, sys
os.environ["JAXRANK_SCORING"] = "jax"  # the compiled kernel, which keeps executables
from jax.experimental import serialize_executable
from jaxrank import cli
from jaxrank._host import executables as _executables

def evaluate(*measures):
  _executables._LOADED.clear()  # as a new process: from the file
  out = io.StringIO()
  with contextlib.redirect_stdout(out):
    code = cli.main(["evaluate", "--example"] + [a for m in measures for a in ("-m", m)])
  return [code, out.getvalue()]

def say(*what):  # one line per result: a crash still leaves the ones before it
  print(json.dumps([*what, len(loads)]), flush=True)
  del loads[:]

loads = []
real = serialize_executable.deserialize_and_load
serialize_executable.deserialize_and_load = lambda *a, **k: loads.append(1) or real(*a, **k)
assert cli._use_compilation_cache(sys.argv[1])
exe = os.path.join(os.path.realpath(sys.argv[1]), "executables")
say("P.5", evaluate("P.5"))
(five,) = os.listdir(exe)
say("P.10", evaluate("P.10"))
(ten,) = set(os.listdir(exe)) - {five}
data5, data10 = (open(os.path.join(exe, n), "rb").read() for n in (five, ten))
say("P.10", evaluate("P.10"))  # loaded from its entry
with open(os.path.join(exe, ten), "wb") as f:  # the report: P.5's entry copied over P.10's
  f.write(data5)
say("P.10", evaluate("P.10"))
with open(os.path.join(exe, five), "wb") as f:
  f.write(data10)
say("P.5", evaluate("P.5"))
rng = random.Random(int(sys.argv[2]))  # the header's bits more densely than the payload's
bits = [8 * i + rng.randrange(8) for i in range(0, 400, 16)] + rng.sample(
    range(8 * 400, 8 * len(data10)), 15)
for bit in bits:
  damaged = bytearray(data10)
  damaged[bit // 8] ^= 1 << (bit % 8)
  with open(os.path.join(exe, ten), "wb") as f:
    f.write(damaged)
  say("P.10", evaluate("P.10"), bit)
"""


def test_the_command_gives_the_uncached_output_for_damaged_or_swapped_entries(tmp_path):
  """The report: P.5's entry copied over P.10's printed P_5's values with exit 0, and 12 of 160
  flipped bits crashed every later run (SIGABRT, SIGSEGV, SIGILL). In a subprocess: a crash
  fails this test, not the suite."""
  both = _evaluate({"JAXRANK_CACHE": "off"}, "P_5", "P_10").stdout.splitlines(keepends=True)
  expected = {m: [0, line] for m in ("P.5", "P.10") for line in both
              if line.startswith(m.replace(".", "_") + " ")}
  done = subprocess.run([sys.executable, "-c", _FLIPS, str(tmp_path / "cache"), "22"],
                        capture_output=True, text=True, timeout=300)
  results = [json.loads(line) for line in done.stdout.splitlines()]
  assert done.returncode == 0, (results[-1:], done.stderr[-3000:])  # the last before a crash
  assert len(results) == 5 + 40
  for measure, output, *bit, _loads in results:
    assert output == expected[measure], (measure, bit)
  # the first two compiled, the third loaded; the swapped and the damaged never deserialised
  assert [r[-1] for r in results] == [0, 0, 1] + [0] * 42
