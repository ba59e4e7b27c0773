"""The TREC side: trec_eval's measure table and host measures, run evaluation on integer-coded
runs and qrels, ir_measures names on runs, and chunked evaluation of big runs."""
