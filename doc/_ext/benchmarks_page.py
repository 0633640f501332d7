"""Sphinx extension: render ``benchmarks/results/`` into the benchmarks page at build time.

Every ``results/<name>.json`` written by ``benchmarks/_harness.py`` becomes one section: the
problem, a table (case, library, median/min/max time, ratio to the baseline, the metrics), a
bar chart of the timings (drawn here with matplotlib), any image the benchmark saved itself
(``results/<name>*.png|svg``), the library versions, the machine, the date and the command
that reproduces it.  A ``.md`` result without a JSON twin is shown verbatim.  Sections are
grouped by estimator (the first token of the file name).

The output goes to ``doc/_generated/`` (not committed, excluded from the source scan) and is
pulled into ``doc/benchmarks.rst`` with ``.. include::``, so the page never goes stale and is
never edited by hand.
"""
import json
import re
import shutil
from pathlib import Path

DOC = Path(__file__).resolve().parents[1]
RESULTS = DOC.parent / "benchmarks" / "results"
OUT = DOC / "_generated"
INCLUDE = OUT / "benchmark_results.rst.inc"

# first token of a results file name -> (section title, user-guide page or None)
GROUPS = {
    "cgvr": ("CGVRClassifier / CGVRRegressor", "user_guide/cgvr"),
    "constrained": ("ConstrainedLasso", "user_guide/constrained_lasso"),
    "lasso": ("ConstrainedLasso", "user_guide/constrained_lasso"),
    "lmnn": ("LMNNMetric", "user_guide/lmnn"),
    "ordinal": ("OrdinalEmbedding", "user_guide/ordinal_embedding"),
    "s3gd": ("S3GDClassifier / S3GDRegressor", "user_guide/s3gd"),
    "s3vm": ("S3VMClassifier", "user_guide/s3vm"),
}
IMAGE_SUFFIXES = (".png", ".svg", ".jpg", ".jpeg")

_SPECIAL = re.compile(r"([\\`*_|<>\[\]])")


def rst_text(value):
    """Free text (problem, notes, labels) made inert for reStructuredText: one line, markup
    characters escaped, no leading list/enumeration/directive marker."""
    text = " ".join(str(value).split())
    text = _SPECIAL.sub(r"\\\1", text)
    if re.match(r"^([-+*#:.]|\d+[.)]|\.\.)", text):
        text = "\\" + text
    return text


def fmt(value):
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, dict)):
        return rst_text(json.dumps(value))
    return rst_text(value)


def group_of(name):
    token = name.split("_", 1)[0].lower()
    return token, GROUPS.get(token, (token, None))


def heading(text, char):
    return [text, char * len(text), ""]


def results_table(payload):
    metric_names = []
    for row in payload.get("results", []):
        for key in row.get("metrics", {}) or {}:
            if key not in metric_names:
                metric_names.append(key)
    header = ["case", "library", "median s", "min s", "max s", "ratio", "median CPU s",
              "load"] + metric_names
    lines = [".. list-table::", "   :header-rows: 1", "   :class: benchmark-table", ""]

    def row_lines(cells):
        out = []
        for i, cell in enumerate(cells):
            prefix = "   * - " if i == 0 else "     - "
            out.append((prefix + cell).rstrip())
        return out

    lines += row_lines([rst_text(h) for h in header])
    for row in payload.get("results", []):
        if "skipped" in row:
            cells = [fmt(row.get("label")), fmt(row.get("library")),
                     "skipped: " + fmt(row["skipped"])] + [""] * (len(header) - 3)
        else:
            metrics = row.get("metrics", {}) or {}
            cells = [fmt(row.get("label")), fmt(row.get("library")), fmt(row.get("median_s")),
                     fmt(row.get("min_s")), fmt(row.get("max_s")),
                     fmt(row.get("ratio_to_baseline")), fmt(row.get("median_cpu_s")),
                     fmt(row.get("load_average"))]
            cells += [fmt(metrics.get(k)) for k in metric_names]
        lines += row_lines(cells)
    return lines + [""]


def timing_plot(payload, path):
    """Horizontal bars: median fit time per case (log scale), min-max as error bars."""
    rows = [r for r in payload.get("results", []) if "median_s" in r]
    if not rows:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = [str(r["label"]) for r in rows][::-1]
    med = [r["median_s"] for r in rows][::-1]
    lo = [max(r["median_s"] - r.get("min_s", r["median_s"]), 0.0) for r in rows][::-1]
    hi = [max(r.get("max_s", r["median_s"]) - r["median_s"], 0.0) for r in rows][::-1]
    colors = ["tab:blue" if r.get("library") == "skstoch" else "tab:gray" for r in rows][::-1]
    fig, ax = plt.subplots(figsize=(7.0, 0.45 * len(rows) + 1.2))
    ax.barh(range(len(rows)), med, xerr=[lo, hi], color=colors, capsize=2)
    ax.set_yticks(range(len(rows)), labels, fontsize=8)
    if min(med) > 0:
        ax.set_xscale("log")
    ax.set_xlabel("fit time, median [s] (blue: skstoch)")
    ax.set_title(payload.get("name", ""), fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return True


def machine_line(machine):
    machine = machine or {}
    cpu = machine.get("cpu_model") or machine.get("processor") or "unknown CPU"
    blas = ", ".join(
        f"{b.get('internal_api')} {b.get('version') or ''}".strip()
        for b in machine.get("blas", []) or []
    )
    text = (f"{cpu}, {machine.get('cpu_count')} cores, Python {machine.get('python')}, "
            f"{machine.get('platform')}")
    if blas:
        text += f"; threadpools: {blas}"
    return rst_text(text)


def json_section(path, payload, images, out):
    name = payload.get("name", path.stem)
    lines = heading(name, "~")
    if not payload.get("results"):
        # not written by the harness (e.g. a kernel before/after measurement): no table
        lines += [f"Raw measurements, not a side-by-side run: ``benchmarks/results/{path.name}``.",
                  ""]
        for image in images:
            lines += [f".. image:: /_generated/{image.name}", f"   :alt: {image.stem}", ""]
        return lines
    lines += [f"**Problem:** {rst_text(payload.get('problem', ''))}", ""]
    lines += [f"Median of {fmt(payload.get('repeat'))} timed fits after "
              f"{fmt(payload.get('warmup'))} warm-up fit(s); ratio = median / median of "
              f"*{rst_text(payload.get('baseline'))}*.", ""]
    lines += results_table(payload)
    plot = out / f"timing_{path.stem}.png"
    if timing_plot(payload, plot):
        lines += [f".. image:: /_generated/{plot.name}", f"   :alt: fit times of {path.stem}", ""]
    for image in images:
        lines += [f".. image:: /_generated/{image.name}", f"   :alt: {image.stem}", ""]
    versions = payload.get("versions")
    if isinstance(versions, dict):  # library versions (files written by the harness)
        versions = ", ".join(f"{k} {v}" for k, v in versions.items() if v)
        lines += [f"**Versions:** {rst_text(versions)}", ""]
    lines += [f"**Machine:** {machine_line(payload.get('machine'))}", ""]
    lines += [f"**Run:** {rst_text(payload.get('date_utc', ''))} with", "",
              ".. code-block:: bash", "", f"   {payload.get('command', '')}", ""]
    if payload.get("notes"):
        lines += [f"**Notes:** {rst_text(payload['notes'])}", ""]
    return lines


def markdown_section(path):
    lines = heading(path.stem, "~")
    lines += ["Shown as written by the benchmark (no JSON twin):", "", ".. code-block:: text", ""]
    lines += ["   " + line if line.strip() else "" for line in path.read_text().splitlines()]
    return lines + [""]


def generate(results=RESULTS, out=OUT):
    """Write the include file; return the number of benchmark results rendered."""
    out.mkdir(parents=True, exist_ok=True)
    for pattern in ("bench_*", "timing_*"):
        for old in out.glob(pattern):
            old.unlink()
    files = sorted(results.glob("*.json")) if results.is_dir() else []
    md_only = [p for p in sorted(results.glob("*.md")) if not p.with_suffix(".json").exists()
               and p.name.lower() != "readme.md"] if results.is_dir() else []
    images = [p for p in sorted(results.iterdir()) if p.suffix.lower() in IMAGE_SUFFIXES] \
        if results.is_dir() else []
    used_images = set()
    groups = {}
    for path in files + md_only:
        token, _ = group_of(path.stem)
        groups.setdefault(token, []).append(path)
    for image in images:
        groups.setdefault(group_of(image.stem)[0], [])

    lines = []
    if not groups:
        lines += ["No benchmark results are committed yet: run a ``benchmarks/bench_*.py`` "
                  "script (see ``benchmarks/README.md``).", ""]
    for token in sorted(groups):
        title, page = group_of(token)[1]
        lines += heading(title, "-")
        if page and (DOC / f"{page}.rst").exists():
            lines += [f"User guide: :doc:`/{page}`.", ""]
        for path in groups[token]:
            if path.suffix == ".json":
                try:
                    payload = json.loads(path.read_text())
                except (OSError, ValueError) as exc:
                    raise RuntimeError(f"benchmark results file {path} is not valid JSON: "
                                       f"{exc}") from exc
                if not isinstance(payload, dict):
                    # raw records (a list) written by a study script, not by the harness
                    payload = {"name": path.stem}
                own = [p for p in images if p.stem.startswith(path.stem)]
                copied = []
                for image in own:
                    target = out / f"bench_{image.name}"
                    shutil.copyfile(image, target)
                    copied.append(target)
                    used_images.add(image)
                lines += json_section(path, payload, copied, out)
            else:
                lines += markdown_section(path)
        group_images = [p for p in images if group_of(p.stem)[0] == token and p not in used_images]
        if group_images:
            lines += heading(f"{title}: figures", "~")
            for image in group_images:
                target = out / f"bench_{image.name}"
                shutil.copyfile(image, target)
                used_images.add(image)
                lines += [f".. figure:: /_generated/{target.name}", f"   :alt: {image.stem}",
                          "", f"   {rst_text(image.name)}", ""]
    include = out / INCLUDE.name
    new = "\n".join(lines) + "\n"
    if not include.exists() or include.read_text() != new:
        include.write_text(new)
    return len(files) + len(md_only)


def _on_builder_inited(app):
    generate()


def setup(app):
    app.connect("builder-inited", _on_builder_inited)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
