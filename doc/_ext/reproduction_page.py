"""Sphinx extension: render ``doc/reproduction/*.json`` into the "Reproducing the papers" page.

Every gallery example that tests a paper's claims writes one record in full mode
(``examples/_reproduction.py``).  This extension groups the records by paper and renders, per
paper, its citation and one table: the claim, the protocol as we ran it, our numbers, the
verdict (reproduced / partly / refuted / not attempted) and why, whether the row tests the
paper's algorithm or our defaults, and the example with the command that regenerates it.
The output goes to ``doc/_generated/reproduction.rst.inc`` (not committed), pulled into
``doc/reproducing.rst`` with ``.. include::``.
"""
import json
from pathlib import Path

try:  # the same inert-text helper as the benchmarks page
    from _ext.benchmarks_page import rst_text
except ImportError:  # loaded standalone (tests)
    from benchmarks_page import rst_text

DOC = Path(__file__).resolve().parents[1]
RECORDS = DOC / "reproduction"
OUT = DOC / "_generated"

PAPERS = {
    "000": ("OrdinalEmbedding", "user_guide/ordinal_embedding",
            "K. Ma, J. Zeng, J. Xiong, Q. Xu, X. Cao, W. Liu and Y. Yao, \"Stochastic non-convex "
            "ordinal embedding with stabilized Barzilai-Borwein step size\", AAAI 2018"),
    "001": ("ConstrainedLasso, LMNNMetric", "user_guide/constrained_lasso",
            "L. Zhang, T. Yang, R. Jin and Z.-H. Zhou, \"Stochastic optimization for "
            "large-scale metric learning / Epro\" (Epro-SGD and Epro-ORDA)"),
    "002": ("S3GDClassifier, S3GDRegressor", "user_guide/s3gd",
            "Y. Mu, W. Liu and W. Fan, \"Stochastic gradient made stable: a manifold "
            "propagation approach for large-scale optimization\""),
    "003": ("S3VMClassifier", "user_guide/s3vm",
            "TSGS3VM: triply stochastic gradient semi-supervised SVM"),
    "004": ("CGVRClassifier, CGVRRegressor", "user_guide/cgvr",
            "X.-B. Jin, X.-Y. Zhang, K. Huang and G.-G. Geng, \"Stochastic conjugate gradient "
            "algorithm with variance reduction\", IEEE TNNLS 30(5):1360-1369, 2019"),
}
COLUMNS = ("claim", "algorithm", "protocol", "ours", "verdict", "why")


def load(records_dir=RECORDS):
    records = []
    for path in sorted(Path(records_dir).glob("*.json")):
        payload = json.loads(path.read_text())
        payload.setdefault("example", path.stem + ".py")
        records.append(payload)
    return records


def _table(rows):
    lines = [".. list-table::", "   :header-rows: 1", "   :widths: 22 8 22 22 9 17",
             "   :class: reproduction-table", ""]
    for r, cells in enumerate([list(COLUMNS)] + rows):
        for i, cell in enumerate(cells):
            prefix = "   * - " if i == 0 else "     - "
            lines.append((prefix + (cell if r else rst_text(cell))).rstrip())
    return lines + [""]


def render(records):
    lines = []
    by_paper = {}
    for rec in records:
        by_paper.setdefault(str(rec.get("paper")), []).append(rec)
    for paper in sorted(set(PAPERS) | set(by_paper)):
        estimators, guide, citation = PAPERS.get(paper, (paper, None, paper))
        title = f"Paper {paper}: {estimators}"
        lines += [title, "-" * len(title), "", rst_text(citation) + ".", ""]
        if guide:
            lines += [f"User guide: :doc:`{guide}`.", ""]
        recs = by_paper.get(paper, [])
        if not recs:
            lines += ["No example records claims of this paper yet.", ""]
            continue
        rows = []
        for rec in recs:
            for c in rec.get("claims", []):
                rows.append([rst_text(c.get(k, "")) for k in COLUMNS])
        lines += _table(rows)
        for rec in recs:
            example = Path(rec["example"]).stem
            lines += [f"* :ref:`sphx_glr_auto_examples_{example}.py` "
                      f"({rst_text(rec.get('mode', ''))} mode, {rst_text(rec.get('date_utc', ''))}"
                      f"; {rst_text(', '.join(f'{k} {v}' for k, v in rec.get('versions', {}).items()))}):",
                      "", "  .. code-block:: bash", "", f"     {rec['command']}", ""]
    return "\n".join(lines) + "\n"


def generate(records_dir=RECORDS, out_dir=OUT):
    records = load(records_dir)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / "reproduction.rst.inc").write_text(render(records))
    return len(records)


def _on_builder_inited(app):
    generate()


def setup(app):
    app.connect("builder-inited", _on_builder_inited)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
