"""Where the TREC path scores: NumPy on the host for small inputs (no JAX imported), the compiled
kernel for large ones (``jaxrank._host.scoring.backend``), with the same output either way."""

import subprocess
import sys

import numpy as np
import pytest

from jaxrank import numpy as jrn
from jaxrank._host import scoring

import repo
from cli_runs import run_cli
from trec_runs import random_trec

DATA = repo.DATA / "trec_eval"


def test_backend_follows_the_size_and_the_environment():
  assert scoring.backend(0, {}) == scoring.backend(scoring.HOST_SLOTS, {}) == "numpy"
  assert scoring.backend(scoring.HOST_SLOTS + 1, {}) == "jax"
  for value, small, large in (("auto", "numpy", "jax"), (" NumPy ", "numpy", "numpy"),
                              ("jax", "jax", "jax"), ("", "numpy", "jax")):
    env = {scoring.SCORING_ENV: value}
    assert (scoring.backend(10, env), scoring.backend(10**9, env)) == (small, large), value
  with pytest.raises(ValueError, match=r"\$JAXRANK_SCORING must be auto, numpy or jax, got 'gpu'"):
    scoring.backend(10, {scoring.SCORING_ENV: "gpu"})


# Every tie policy, trec_eval's options and the measures that read judged documents.
COMMANDS = [
    ["-q", "-m", "all_trec", "qrels.test", "results.test"],
    ["-q", "-c", "-M", "20", "-m", "all_trec", "qrels.test", "results.test"],
    ["-q", "-l", "2", "-m", "all_trec", "qrels.rel_level", "results.test"],
    ["-q", "-m", "all_trec", "qrels-302.test", "results-302.test"],
    *(["-q", "--ties", ties, "-m", "map", "-m", "ndcg_cut.5,10", "-m", "recip_rank", "-m", "P.5",
       "-m", "nDCG@10", "-m", "ERR@5", "-m", "RBP(p=0.5)", "-m", "Judged@10",
       *(("-m", "bpref", "-m", "infAP") if ties in ("trec", "first") else ()),
       "qrels.test", "results.test"]
      for ties in ("trec", "first", "average", "optimistic", "pessimistic")),
]


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a[:-2]))
def test_numpy_and_the_compiled_kernel_print_the_same(args, capsys, monkeypatch):
  args = [str(DATA / a) if (DATA / a).is_file() else a for a in args]
  outputs = []
  for chosen in ("numpy", "jax"):
    monkeypatch.setenv(scoring.SCORING_ENV, chosen)
    code, out, err = run_cli(capsys, *args)
    assert code == 0, err
    outputs.append(out)
  assert outputs[0] == outputs[1]
  assert len(outputs[0].splitlines()) > 20


@pytest.mark.parametrize("seed", [0, 1])
def test_numpy_and_the_compiled_kernel_agree_on_random_dicts(seed, monkeypatch):
  run, qrels = random_trec(seed, queries=40)
  names = ["map", "ndcg_cut_10", "P_5", "recip_rank", "bpref", "infAP", "Rprec", "nDCG@10",
           "ERR@10", "Judged@5", "set_F"]
  values = []
  for chosen in ("numpy", "jax"):
    monkeypatch.setenv(scoring.SCORING_ENV, chosen)
    values.append(jrn.evaluate_run(run, qrels, names))
  assert values[0].keys() == values[1].keys()
  for name in values[0]:
    a, b = values[0][name], values[1][name]
    assert a.keys() == b.keys(), name
    np.testing.assert_allclose([a[q] for q in a], [b[q] for q in a], rtol=1e-12, atol=1e-15,
                               err_msg=name)


def test_a_small_run_never_imports_jax():
  code = ("import sys; from jaxrank import cli; rc = cli.main(['evaluate', '-q', '-m', 'all_trec',"
          f" {str(DATA / 'qrels.test')!r}, {str(DATA / 'results.test')!r}]);"
          "sys.stdout.flush(); assert rc == 0; assert 'jax' not in sys.modules, 'jax imported'")
  done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                        timeout=300, env={**__import__("os").environ, "JAXRANK_CACHE": "off"})
  assert done.returncode == 0, done.stderr[-2000:]
  assert "map" in done.stdout
