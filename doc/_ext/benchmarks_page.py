"""Sphinx extension: render ``benchmarks/results/`` into the benchmarks page at build time.

The page has one section per estimator family, in the order and with the content that
``benchmarks/_harness.py`` declares in ``FAMILIES`` (script, user-guide page, peers, headline
results, figures, quick and full commands):

* each headline result: a table (a ``results/<stem>.json`` written by the harness's
  ``run_benchmark`` becomes a table of case, library, median/min/max time, ratio to the
  baseline and the metrics, plus a bar chart of the timings; any other result is its ``.md``
  twin with its markdown tables turned into reStructuredText tables), then the library
  versions, the machine, the date and the command that wrote it;
* the family's figures (images the benchmark saved in ``results/``);
* the family's other current result files, as downloads;
* the commands that reproduce every file of the family, and its quick check.

Studies (``benchmarks/studies/``) are not rendered.  The output goes to ``doc/_generated/``
(not committed, excluded from the source scan) and is pulled into ``doc/benchmarks.rst`` with
``.. include::``, so the page never goes stale and is never edited by hand.
"""
import importlib.util
import json
import re
import shutil
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[1]
BENCHMARKS = DOC.parent / "benchmarks"
RESULTS = BENCHMARKS / "results"
OUT = DOC / "_generated"
INCLUDE = OUT / "benchmark_results.rst.inc"

_SPECIAL = re.compile(r"([\\`*_|<>\[\]])")


def load_harness(path=BENCHMARKS / "_harness.py"):
    """``benchmarks/_harness.py`` as a module (standard library only: no skstoch import)."""
    name = "_skstoch_bench_harness"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    # registered before it runs: its dataclasses resolve postponed annotations through
    # sys.modules[cls.__module__]
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def rst_text(value):
    """Free text (problem, notes, labels) made inert for reStructuredText: one line, markup
    characters escaped, no leading list/enumeration/directive marker."""
    text = " ".join(str(value).split())
    text = _SPECIAL.sub(r"\\\1", text)
    return _guard_start(text)


def _guard_start(text):
    if re.match(r"^([-+*#:.]|\d+[.)]|\.\.)", text):
        text = "\\" + text
    return text


def md_inline(text):
    """One line of markdown: `code` spans become literals, everything else is escaped."""
    parts = " ".join(str(text).split()).split("`")
    if len(parts) % 2 == 0:          # an unpaired backtick: no code spans
        return rst_text(text)
    out = []
    for k, part in enumerate(parts):
        if k % 2 == 0:
            out.append(_SPECIAL.sub(r"\\\1", part))
        elif part.strip():
            # escaped spaces let a literal touch the text around it
            out.append("\\ ``" + part.strip() + "``\\ ")
    return _guard_start("".join(out).strip())


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


def heading(text, char):
    return [text, char * len(text), ""]


def list_table(header, rows):
    """A ``list-table`` directive (every row padded or cut to the header's width)."""
    lines = [".. list-table::", "   :header-rows: 1", "   :class: benchmark-table", ""]
    for cells in [header] + rows:
        cells = (list(cells) + [""] * len(header))[:len(header)]
        for i, cell in enumerate(cells):
            lines.append((("   * - " if i == 0 else "     - ") + cell).rstrip())
    return lines + [""]


def results_table(payload):
    metric_names = []
    for row in payload.get("results", []):
        for key in row.get("metrics", {}) or {}:
            if key not in metric_names:
                metric_names.append(key)
    header = ["case", "library", "median s", "min s", "max s", "ratio", "median CPU s",
              "load"] + metric_names
    rows = []
    for row in payload.get("results", []):
        if "skipped" in row:
            rows.append([fmt(row.get("label")), fmt(row.get("library")),
                         "skipped: " + fmt(row["skipped"])])
            continue
        metrics = row.get("metrics", {}) or {}
        rows.append([fmt(row.get("label")), fmt(row.get("library")), fmt(row.get("median_s")),
                     fmt(row.get("min_s")), fmt(row.get("max_s")),
                     fmt(row.get("ratio_to_baseline")), fmt(row.get("median_cpu_s")),
                     fmt(row.get("load_average"))] + [fmt(metrics.get(k)) for k in metric_names])
    return list_table([rst_text(h) for h in header], rows)


def markdown_to_rst(text, *, skip_title=True):
    """A results ``.md`` file as reStructuredText: ``|`` tables become list-tables, headings
    bold lines, ``- `` items a bullet list, paragraphs escaped text with code spans."""
    lines, out, i = text.splitlines(), [], 0
    while i < len(lines):
        line = lines[i].strip()
        if line.startswith("|"):
            block = []
            while i < len(lines) and lines[i].strip().startswith("|"):
                block.append(lines[i].strip())
                i += 1
            cells = [[md_inline(c) for c in row.strip("|").split("|")] for row in block
                     if not re.fullmatch(r"\|?[\s:|-]+\|?", row)]
            if cells:
                out += list_table(cells[0], cells[1:])
            continue
        i += 1
        if not line:
            continue
        if line.startswith("#"):
            level = len(line) - len(line.lstrip("#"))
            if not (skip_title and level == 1):
                out += ["**" + rst_text(line.lstrip("#").strip()) + "**", ""]
            continue
        if line.startswith("- "):
            out += ["- " + md_inline(line[2:])]
            if i >= len(lines) or not lines[i].strip().startswith("- "):
                out.append("")
            continue
        para = [line]
        while i < len(lines) and lines[i].strip() and not lines[i].strip().startswith(
                ("|", "#", "- ")):
            para.append(lines[i].strip())
            i += 1
        out += [md_inline(" ".join(para)), ""]
    return out


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


def provenance(payload):
    """Versions, machine, date and command of one results file (what it records)."""
    lines = []
    versions = payload.get("versions")
    if isinstance(versions, dict):
        versions = ", ".join(f"{k} {v}" for k, v in versions.items() if v)
    if versions:
        lines += [f"**Versions:** {rst_text(versions)}", ""]
    if payload.get("machine"):
        lines += [f"**Machine:** {machine_line(payload['machine'])}", ""]
    if payload.get("command"):
        lines += [f"**Run:** {rst_text(payload.get('date_utc', ''))} with", "",
                  ".. code-block:: bash", "", f"   {payload['command']}", ""]
    return lines


def _read_json(path):
    try:
        payload = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise RuntimeError(f"benchmark results file {path} is not valid JSON: {exc}") from exc
    return payload if isinstance(payload, dict) else {}


def headline_section(stem, results, out):
    """One headline result: its table (harness payload or markdown twin) and provenance."""
    path_json, path_md = results / f"{stem}.json", results / f"{stem}.md"
    payload = _read_json(path_json) if path_json.exists() else {}
    lines = heading(stem, "~")
    if payload.get("results") and all("label" in r for r in payload["results"]) and any(
            "median_s" in r for r in payload["results"]):
        lines += [f"**Problem:** {rst_text(payload.get('problem', ''))}", ""]
        lines += [f"Median of {fmt(payload.get('repeat'))} timed fits after "
                  f"{fmt(payload.get('warmup'))} warm-up fit(s); ratio = median / median of "
                  f"*{rst_text(payload.get('baseline'))}*.", ""]
        lines += results_table(payload)
        plot = out / f"timing_{stem}.png"
        if timing_plot(payload, plot):
            lines += [f".. image:: /_generated/{plot.name}", f"   :alt: fit times of {stem}", ""]
        if payload.get("notes"):
            lines += [f"**Notes:** {rst_text(payload['notes'])}", ""]
    elif path_md.exists():
        lines += markdown_to_rst(path_md.read_text())
    else:
        lines += [f"``benchmarks/results/{stem}`` is missing: run the family's command below.",
                  ""]
    return lines + provenance(payload)


def family_section(key, family, results, out, family_of):
    lines = heading(family.title, "-")
    guide = f"User guide: :doc:`/{family.guide}`. " if (DOC / f"{family.guide}.rst").exists() \
        else ""
    lines += [f"{guide}Script: ``benchmarks/{family.script}``. Peers: "
              f"{rst_text(family.peers)}.", ""]
    for stem in family.headline:
        lines += headline_section(stem, results, out)
    for name in family.figures:
        image = results / name
        if image.exists():
            target = out / f"bench_{name}"
            shutil.copyfile(image, target)
            lines += [f".. figure:: /_generated/{target.name}", f"   :alt: {image.stem}", "",
                      f"   {rst_text(name)}", ""]
    shown = set(family.headline)
    others = sorted({p.stem for p in results.iterdir() if p.suffix in (".md", ".json")
                     and family_of(p.stem) == key and p.stem not in shown}) \
        if results.is_dir() else []
    if others:
        lines += [f"Other current results of this family ({len(others)} files, the same "
                  "benchmark's other problems or targets):", ""]
        for stem in others:
            source = results / f"{stem}.md"
            if not source.exists():
                source = results / f"{stem}.json"
            target = out / f"bench_{source.name}"
            shutil.copyfile(source, target)
            lines.append(f"- :download:`{source.name} </_generated/{target.name}>`")
        lines.append("")
    lines += ["Reproduce every file of this family (bench environment, quiet machine):", "",
              ".. code-block:: bash", ""] + [f"   {c}" for c in family.full] + [""]
    lines += ["Quick check that the benchmark runs end to end (small problems, nothing "
              "written to ``results/``):", "", ".. code-block:: bash", ""]
    lines += [f"   {c}" for c in family.quick] + [""]
    return lines


def generate(results=RESULTS, out=OUT, families=None):
    """Write the include file; return the number of results files (stems) in ``results``
    that belong to a family (and so are rendered or listed).  ``families`` defaults to
    ``FAMILIES`` of ``benchmarks/_harness.py``."""
    harness = load_harness()
    families = harness.FAMILIES if families is None else families

    def family_of(stem):
        return harness.family_of(stem, families)

    out.mkdir(parents=True, exist_ok=True)
    for pattern in ("bench_*", "timing_*"):
        for old in out.glob(pattern):
            old.unlink()
    lines = []
    for key, family in families.items():
        lines += family_section(key, family, results, out, family_of)
    include = out / INCLUDE.name
    new = "\n".join(lines) + "\n"
    if not include.exists() or include.read_text() != new:
        include.write_text(new)
    stems = {p.stem for p in results.glob("*") if p.suffix in (".md", ".json")} \
        if results.is_dir() else set()
    return len({s for s in stems if family_of(s)})


def _on_builder_inited(app):
    generate()


def setup(app):
    app.connect("builder-inited", _on_builder_inited)
    return {"version": "2.0", "parallel_read_safe": True, "parallel_write_safe": True}
