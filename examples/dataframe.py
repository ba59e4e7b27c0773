"""From pandas DataFrames (Evidently's / RecBole's layout: user_id, item_id, score or rank,
target) to jaxrank metrics per user, and back to TREC files.

    pip install "jaxrank[pandas]" && python examples/dataframe.py
"""

import os
import sys
import tempfile

try:
  import pandas as pd
except ImportError:  # one line, not a traceback
  sys.exit('dataframe.py needs pandas: pip install "jaxrank[pandas]"')

from jaxrank import io
from jaxrank import numpy as jrn

recommendations = pd.DataFrame({
    "user_id": [1, 1, 1, 2, 2, 3],
    "item_id": [10, 11, 12, 10, 13, 14],
    "rank": [1, 2, 3, 1, 2, 1],
})
interactions = pd.DataFrame({
    "user_id": [1, 2, 2, 3],
    "item_id": [11, 13, 15, 99],
    "target": [1, 2, 1, 1],
})

run = io.run_from_frame(recommendations, score_col=None, rank_col="rank")
qrels = io.qrels_from_frame(interactions)
per_user = jrn.evaluate_run(run, qrels, ["ndcg@3", "recall@3", "mrr", "P_3"])
print(pd.DataFrame(per_user))  # one row per user, one column per metric
print(jrn.evaluate_run(run, qrels, ["ndcg@3", "recall@3", "mrr"], reduce="mean"))

# The same data as TREC files, for `jaxrank evaluate` or trec_eval.
folder = tempfile.mkdtemp()
io.write_run(run, os.path.join(folder, "run.txt"), tag="from-pandas")
io.write_qrels(qrels, os.path.join(folder, "qrels.txt"))
print(f"jaxrank evaluate -q -m ndcg_cut.3 -m recip_rank {folder}/qrels.txt {folder}/run.txt")
print(io.run_to_frame(io.read_run(os.path.join(folder, "run.txt"))))
