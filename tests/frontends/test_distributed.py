"""Two processes on localhost with ``jax.distributed.initialize`` (CPU collectives: gloo).

Each process runs ``distributed_worker.py``, holding half the users (then half the catalog) on
its one CPU device; metrics, a state merged across the processes and catalog-sharded ranks must
equal the single-process result (checked in each worker, which prints ``OK``).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

WORKER = Path(__file__).with_name("distributed_worker.py")


def free_port() -> int:
  with socket.socket() as s:
    s.bind(("localhost", 0))
    return s.getsockname()[1]


def test_two_processes_give_the_single_process_result():
  port = free_port()
  env = {**os.environ, "JAX_PLATFORMS": "cpu", "XLA_FLAGS": ""}
  procs = [subprocess.Popen([sys.executable, str(WORKER), str(port), str(i), "2"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            cwd=WORKER.parents[2])
           for i in range(2)]
  outs = []
  try:
    for p in procs:
      outs.append(p.communicate(timeout=300)[0])
  finally:
    for p in procs:
      if p.poll() is None:
        p.kill()
  for i, (p, out) in enumerate(zip(procs, outs)):
    assert p.returncode == 0 and f"process {i}: OK" in out, out[-3000:]
