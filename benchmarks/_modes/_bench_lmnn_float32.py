"""LMNNMetric on float32 X (issue 21.4): the fit's allocation beyond X (tracemalloc), in
units of the float32 X's bytes, for a float32 X and its float64 conversion, with the best
wall time of alternated fits and the relative difference of ``metric_``.
Default recipe above ``search_size`` rows: 'random' triplets, c='auto' (two candidate fits).

    PYTHONPATH=. python benchmarks/_modes/_bench_lmnn_float32.py [n ...]

Rows of :func:`_bench_float32.main` (``LMNNMetric``, 100 features; default n = 100,000 and
200,000), written to ``results/lmnn_float32.{json,md}``.  Timings on a loaded machine are
noisy: read the ratio of one run.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))     # benchmarks/ (_harness)
from _bench_float32 import COLUMNS, main  # noqa: E402


def run(sizes=(100_000, 200_000)):
    from _harness import markdown_table, write_results
    rows = [main("LMNNMetric", "dense", n, 100) for n in sizes]
    cols = ("n",) + COLUMNS[2:]
    lines = ["# LMNNMetric, float32 X read in place (issue 21.4)", "",
             "Peak allocation during fit (tracemalloc, X itself not counted) in units of the "
             "float32 X's bytes, for a float32 X and for its float64 conversion (100 "
             "features, 3 classes, defaults: 'random' triplets, c='auto'); best wall time of "
             "alternated fits (2-core machine, possibly shared: read the ratio); relative l2 "
             "difference of metric_.", ""] + markdown_table(cols, rows)
    write_results("lmnn_float32", {"name": "lmnn_float32", "results": rows},
                  "\n".join(lines) + "\n")


if __name__ == "__main__":
    run(tuple(int(a) for a in sys.argv[1:]) or (100_000, 200_000))
