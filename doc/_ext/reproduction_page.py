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
            "K. Ma, J. Zeng, J. Xiong, Q. Xu, X. Cao, W. Liu and Y. Yao, \"Fast stochastic "
            "ordinal embedding with variance reduction and adaptive step size\", IEEE TKDE, "
            "2019 (SVRG-SBB)"),
    "001": ("ConstrainedLasso, LMNNMetric", "user_guide/constrained_lasso",
            "J. Chen, T. Yang, Q. Lin, L. Zhang and Y. Chang, \"Optimal stochastic strongly "
            "convex optimization with a logarithmic number of projections\", UAI 2016 "
            "(Epro-SGD and Epro-ORDA)"),
    "002": ("S3GDClassifier, S3GDRegressor", "user_guide/s3gd",
            "Y. Mu, W. Liu and W. Fan, \"Stochastic gradient made stable: a manifold "
            "propagation approach for large-scale optimization\", IEEE TKDE 29(2), 2017"),
    "003": ("S3VMClassifier", "user_guide/s3vm",
            "X. Geng, B. Gu, X. Li, W. Shi, G. Zheng and H. Huang, \"Scalable semi-supervised "
            "SVM via triply stochastic gradients\", IJCAI 2019 (TSGS3VM)"),
    "004": ("CGVRClassifier, CGVRRegressor", "user_guide/cgvr",
            "X.-B. Jin, X.-Y. Zhang, K. Huang and G.-G. Geng, \"Stochastic conjugate gradient "
            "algorithm with variance reduction\", IEEE TNNLS 30(5):1360-1369, 2019"),
}
# the paper each gallery example tests (records written before ``paper_id`` existed)
EXAMPLE_PAPER = {
    "plot_ordinal_embedding_svrg_sbb": "000",
    "plot_ordinal_embedding_music_sun397": "000",
    "plot_constrained_lasso_epro": "001",
    "plot_lmnn_digits": "001",
    "plot_s3gd_convergence": "002",
    "plot_s3vm_moons": "003",
    "plot_cgvr_convergence": "004",
    "plot_cgvr_auc": "004",
}
# Headline claims no example tests, with why: listed so that the page covers every headline
# claim of the five papers.  A row here is removed once an example records the claim.
UNRECORDED = {}
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


def paper_id(record):
    """The paper a record tests: its ``paper_id``, a leading paper number in ``paper``, or
    the example's entry in :data:`EXAMPLE_PAPER`; else its ``paper`` text."""
    if record.get("paper_id"):
        return str(record["paper_id"])
    paper = str(record.get("paper", ""))
    if paper[:3].isdigit():
        return paper[:3]
    return EXAMPLE_PAPER.get(Path(str(record.get("example", ""))).stem, paper)


def _rows(recs, unrecorded):
    """Table rows: every claim of every record, except a 'not attempted' row whose claim
    another record of the paper tests (a newer example superseding an older record), then
    the paper's unrecorded headline claims."""
    tested = {c.get("claim") for rec in recs for c in rec.get("claims", [])
              if c.get("verdict") != "not attempted"}
    rows = []
    for rec in recs:
        for c in rec.get("claims", []):
            if c.get("verdict") == "not attempted" and c.get("claim") in tested:
                continue
            rows.append([rst_text(c.get(k, "")) for k in COLUMNS])
    for text, why in unrecorded:
        if text not in tested:
            rows.append([rst_text(v) for v in (text, "paper", "no example runs it", "",
                                                "not attempted", why)])
    return rows


def render(records, unrecorded=None):
    unrecorded = UNRECORDED if unrecorded is None else unrecorded
    lines = []
    by_paper = {}
    for rec in records:
        by_paper.setdefault(paper_id(rec), []).append(rec)
    for paper in sorted(set(PAPERS) | set(by_paper)):
        estimators, guide, citation = PAPERS.get(paper, (paper, None, paper))
        title = f"Paper {paper}: {estimators}" if paper in PAPERS else rst_text(paper)
        lines += [title, "-" * len(title), "", rst_text(citation) + ".", ""]
        if guide:
            lines += [f"User guide: :doc:`{guide}`.", ""]
        recs = by_paper.get(paper, [])
        rows = _rows(recs, unrecorded.get(paper, []))
        if not rows:
            lines += ["No example records claims of this paper yet.", ""]
            continue
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
