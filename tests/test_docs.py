"""The documentation: its doctested example, its generated pages, and the full build.

* fast tests: the getting-started page's Pipeline + GridSearchCV example passes under
  doctest; the API reference lists every public name; the benchmarks page generator renders
  results files (the real ones, one section per family, and adversarial ones);
* slow test (run in CI): ``sphinx -W --keep-going`` builds the site (examples in fast mode)
  without a warning, then headless chromium opens the built index page, the gallery index
  and the quick-tour example and confirms they render with their images loaded.
"""
import doctest
import html
import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import skstoch

from conftest import load_module

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "doc"


def _load_benchmarks_page():
    return load_module(DOC / "_ext" / "benchmarks_page.py")


# -- fast checks ---------------------------------------------------------------------------

def test_getting_started_example_passes_doctest():
    pytest.importorskip("sklearn")
    result = doctest.testfile(str(DOC / "getting_started.rst"), module_relative=False,
                              optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE,
                              verbose=False, report=True)
    assert result.attempted >= 10, "the getting-started example is missing"
    assert result.failed == 0


def test_getting_started_example_is_short_and_uses_pipeline_and_gridsearch():
    text = (DOC / "getting_started.rst").read_text()
    first = text.split(".. doctest::", 2)[1]
    lines = [ln for ln in first.splitlines() if ln.strip().startswith(">>>")]
    assert len(lines) <= 11, f"the first example has {len(lines)} lines"
    assert any("make_pipeline(" in ln for ln in lines)
    assert any("GridSearchCV(" in ln for ln in lines)


def test_getting_started_shows_the_readme_commands():
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"```bash\n(.*?)```", readme, re.S).group(1)
    commands = [ln for ln in block.splitlines() if ln and not ln.startswith("#")][:2]
    page = (DOC / "getting_started.rst").read_text()
    for command in commands:
        assert command.strip() in page, f"README command not on the getting-started page: {command}"


def test_api_reference_lists_every_public_name():
    text = (DOC / "api.rst").read_text()
    listed = set(re.findall(r"^   (\w+)$", text, re.M))
    public = {name for name in skstoch.__all__ if not name.startswith("_")}
    assert public <= listed, f"missing from doc/api.rst: {sorted(public - listed)}"


def test_user_guide_has_a_page_per_estimator_family():
    """Every public estimator is named on some user-guide page (the page itself must
    exist: no placeholder)."""
    pages = {p.stem: p.read_text() for p in (DOC / "user_guide").glob("*.rst")
             if p.stem != "index"}
    assert pages, "doc/user_guide holds no estimator page"
    text = "\n".join(pages.values())
    missing = [name for name in skstoch.__all__ if name[0].isupper() and name not in text]
    assert not missing, f"estimators no user-guide page mentions: {missing}"


def test_benchmarks_page_renders_adversarial_results(tmp_path):
    page = _load_benchmarks_page()
    harness = page.load_harness()
    results = tmp_path / "results"
    results.mkdir()
    payload = {
        "name": "s3vm_odd_name_",
        "problem": "- n=10 *bold* `tick` |bar| a_b_ end_",
        "baseline": "ref_",
        "repeat": 3, "warmup": 1, "date_utc": "2026-01-01T00:00:00+00:00",
        "command": "python benchmarks/bench_s3vm.py accuracy",
        "versions": {"skstoch": "0.1", "cblearn": None},
        "machine": {"cpu_model": "Test CPU", "cpu_count": 2, "python": "3.11",
                    "platform": "Linux", "blas": [{"internal_api": "openblas",
                                                   "version": None, "num_threads": 2}]},
        "notes": "1. not a list | not a table",
        "results": [
            {"label": "ref_", "library": "scikit-learn", "median_s": 0.5, "min_s": 0.4,
             "max_s": 0.6, "times_s": [0.4, 0.5, 0.6], "metrics": {"accuracy": 0.9},
             "ratio_to_baseline": 1.0},
            {"label": "skstoch *S3VM*", "library": "skstoch", "median_s": 0.25, "min_s": 0.2,
             "max_s": 0.3, "times_s": [0.2, 0.25, 0.3],
             "metrics": {"accuracy": 0.95, "reached": True}, "ratio_to_baseline": 0.5},
            {"label": "peer", "library": "cblearn", "skipped": "No module named 'cblearn'"},
        ],
    }
    (results / "s3vm_odd.json").write_text(json.dumps(payload))
    # a markdown-only headline (tables, a heading, code spans, a list) and a non-headline file
    (results / "s3vm_summary.md").write_text(
        "# s3vm_summary\n\nSome `code`s and *stars* next to text.\n\n## part\n\n"
        "| a | b |\n|---|---|\n| 1 | `x_y` |\n| 2 |\n\n- item one\n- item `two`\n")
    (results / "s3vm_other.md").write_text("# other\n")
    (results / "unclaimed.md").write_text("# not a family's file\n")
    families = {"s3vm": harness.Family(
        "S3VMClassifier", "bench_s3vm.py", "user_guide/s3vm", "peer_lib *one*",
        headline=("s3vm_odd", "s3vm_summary", "s3vm_missing"), quick=("quick cmd",),
        full=("full cmd",))}
    out = tmp_path / "generated"
    assert page.generate(results, out, families) == 3   # unclaimed.md is not a family's
    text = (out / "benchmark_results.rst.inc").read_text()
    assert (out / "timing_s3vm_odd.png").stat().st_size > 1000
    assert "S3VMClassifier" in text and "Test CPU" in text and "skipped" in text
    assert "python benchmarks/bench_s3vm.py accuracy" in text
    assert "full cmd" in text and "quick cmd" in text
    assert "s3vm_missing`` is missing" in text
    assert ":download:`s3vm_other.md" in text and (out / "bench_s3vm_other.md").exists()
    assert "unclaimed" not in text
    # the markdown table became a list-table (no raw '|' row left)
    assert "| a | b |" not in text and text.count(".. list-table::") == 2
    # the generated reStructuredText parses without a single docutils message
    docutils_core = pytest.importorskip("docutils.core")
    stream = io.StringIO()
    # :doc: and :download: are Sphinx roles; plain docutils does not know them
    body = text.replace(":doc:", "").replace(":download:", "")
    doctree = docutils_core.publish_doctree(body, settings_overrides={
        "report_level": 2, "halt_level": 5, "warning_stream": stream})
    assert stream.getvalue() == "", stream.getvalue()
    tree = doctree.astext()
    assert "not a list" in tree and "*bold*" in tree and "*stars*" in tree
    assert "x_y" in tree and "item two" in tree


def test_benchmarks_page_renders_committed_results(tmp_path):
    page = _load_benchmarks_page()
    results = ROOT / "benchmarks" / "results"
    stems = {p.stem for p in results.glob("*") if p.suffix in (".md", ".json")}
    assert page.generate(results, tmp_path) == len(stems)   # every file belongs to a family
    text = (tmp_path / "benchmark_results.rst.inc").read_text()
    for stem in stems:
        assert stem in text
    for family in page.load_harness().FAMILIES.values():
        assert family.title in text
        assert all(command in text for command in family.full + family.quick)
    assert "is missing" not in text


def test_plain_docstrings_escapes_text_but_not_literals_spanning_lines():
    module = load_module(DOC / "_ext" / "plain_docstrings.py")
    lines = ["coef_ : the |r| of ``a = c max_i", "s_i (||x_i||^2 + b)`` and |r| again", "",
             "n_iter_ : int"]
    out = module.escape_docstring(lines)
    assert out[0] == r"coef_ : the \|r\| of ``a = c max_i"
    assert out[1] == r"s_i (||x_i||^2 + b)`` and \|r\| again"
    assert out[3] == "n_iter_ : int"


def test_reproduction_page_renders_records(tmp_path):
    sys.path.insert(0, str(DOC / "_ext"))
    sys.path.insert(0, str(ROOT / "examples"))
    try:
        import _reproduction
        import reproduction_page
    finally:
        sys.path.pop(0)
        sys.path.pop(0)
    with pytest.raises(ValueError, match="verdict"):
        _reproduction.claim("x", protocol="p", ours="o", verdict="maybe", why="w")
    rows = [_reproduction.claim("*S3GD* is best on 6/9 | data_", protocol="9 `sets`",
                                ours="3/9", verdict="refuted", why="proxies_"),
            _reproduction.claim("defaults", protocol="same", ours="9/9", verdict="reproduced",
                                why="ours", algorithm="ours")]
    records = tmp_path / "records"
    records.mkdir()
    (records / "plot_x.json").write_text(json.dumps(
        {"paper": "002", "example": "plot_x.py", "command": "python examples/plot_x.py",
         "mode": "full", "versions": {"skstoch": "0.1"}, "claims": rows}))
    assert reproduction_page.generate(records, tmp_path / "out") == 1
    text = (tmp_path / "out" / "reproduction.rst.inc").read_text()
    assert "refuted" in text and "Paper 004" in text and "No example records" in text
    docutils_core = pytest.importorskip("docutils.core")
    stream = io.StringIO()
    body = re.sub(r":(doc|ref):`[^`]*`", "x", text)   # Sphinx roles
    doctree = docutils_core.publish_doctree(body, settings_overrides={
        "report_level": 2, "halt_level": 5, "warning_stream": stream})
    assert stream.getvalue() == "", stream.getvalue()
    assert "*S3GD* is best on 6/9 | data_" in doctree.astext()


def test_reproduction_page_groups_the_committed_records_by_paper(tmp_path):
    """Every committed record lands under one of the five papers (never a section of its
    own), each paper has rows, and a 'not attempted' row is dropped once another record of
    the paper tests the same claim."""
    sys.path.insert(0, str(DOC / "_ext"))
    try:
        import reproduction_page
    finally:
        sys.path.pop(0)
    records = reproduction_page.load()
    assert records, "doc/reproduction/ holds no record"
    assert {reproduction_page.paper_id(r) for r in records} <= set(reproduction_page.PAPERS)
    text = reproduction_page.render(records)
    assert "No example records" not in text
    assert text.count("\nPaper ") + text.startswith("Paper ") == len(reproduction_page.PAPERS)
    claim = {"claim": "Fig. 9: x", "protocol": "p", "ours": "o", "why": "w",
             "algorithm": "paper"}
    old = {"paper": "004", "example": "plot_a.py", "command": "c",
           "claims": [dict(claim, verdict="not attempted", why="old row")]}
    new = {"paper": "004", "example": "plot_b.py", "command": "c",
           "claims": [dict(claim, verdict="refuted")]}
    text = reproduction_page.render([old, new], unrecorded={})
    assert "refuted" in text and "old row" not in text
    text = reproduction_page.render([old], unrecorded={})
    assert "old row" in text


# -- the full build and the browser check (slow) -------------------------------------------

def _chromium():
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


@pytest.fixture(scope="module")
def built_site(tmp_path_factory):
    for module in ("sphinx", "sphinx_gallery", "numpydoc", "pydata_sphinx_theme", "matplotlib"):
        pytest.importorskip(module, reason=f"{module} (the 'doc'/'test' extra) builds the docs")
    out = tmp_path_factory.mktemp("docs")
    env = dict(os.environ, SKSTOCH_EXAMPLE_FAST="1", MPLBACKEND="Agg",
               SKSTOCH_FIGURES_DIR=str(out / "figures"),
               PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    cmd = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
           "-d", str(out / "doctrees"), str(DOC), str(out / "html")]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, (
        f"sphinx -W failed ({proc.returncode}):\n{proc.stderr[-6000:]}\n{proc.stdout[-2000:]}")
    return out / "html"


@pytest.mark.slow
def test_docs_build_without_warnings(built_site):
    for page in ("index.html", "getting_started.html", "api.html", "scaling_out.html",
                 "benchmarks.html", "user_guide/index.html", "auto_examples/index.html",
                 "auto_examples/plot_quick_tour.html"):
        assert (built_site / page).stat().st_size > 0, page
    for name in skstoch.__all__:
        if name[0].isupper():
            assert (built_site / "gen_modules" / f"skstoch.{name}.html").exists(), name
    for example in (ROOT / "examples").glob("plot_*.py"):
        assert (built_site / "auto_examples" / f"{example.stem}.html").exists(), example.name
    images = list((built_site / "_images").glob("sphx_glr_plot_quick_tour_*.png"))
    assert len(images) >= 4, "the quick tour's figures are missing from the build"


_CHECK_SCRIPT = """
<script>
// once every <img> has finished (loaded or failed), list them; poll rather than wait for the
// window "load" event, which external resources (a math CDN offline) can hold back forever
(function () {
  var tries = 0;
  function report() {
    var images = document.images, rows = [], pending = 0;
    for (var i = 0; i < images.length; i++) {
      if (!images[i].complete) { pending++; }
      rows.push(images[i].getAttribute("src") + " " + images[i].complete + " "
                + images[i].naturalWidth);
    }
    if (pending > 0 && tries++ < 100) { setTimeout(report, 100); return; }
    // the text a reader sees outside code blocks and inline literals
    var prose = document.body.cloneNode(true);
    prose.querySelectorAll("pre, code, script, style, math").forEach(function (node) {
      node.remove();
    });
    var pre = document.createElement("pre");
    pre.id = "skstoch-render-check";
    pre.textContent = "TITLE " + document.title + "\\n" + rows.join("\\n");
    var text = document.createElement("pre");
    text.id = "skstoch-render-text";
    text.textContent = prose.textContent;
    document.body.appendChild(text);
    document.body.appendChild(pre);
  }
  document.addEventListener("DOMContentLoaded", function () { setTimeout(report, 100); });
})();
</script>
"""


def _render(chromium, html_file):
    """Open a copy of the page (same directory, so relative links resolve) with a script that
    lists every <img> once the page has loaded; return (title, [(src, complete, width)])."""
    probe = html_file.with_name(f"_render_check_{html_file.name}")
    probe.write_text(html_file.read_text().replace("</body>", _CHECK_SCRIPT + "</body>"))
    cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
           "--allow-file-access-from-files", "--virtual-time-budget=15000",
           "--window-size=1280,4000", "--dump-dom", probe.as_uri()]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    finally:
        probe.unlink()
    match = re.search(r'<pre id="skstoch-render-check">(.*?)</pre>', proc.stdout, re.S)
    assert match, f"chromium did not finish loading {html_file.name}:\n{proc.stderr[-2000:]}"
    lines = match.group(1).strip().splitlines()
    title = lines[0][len("TITLE "):]
    images = []
    for line in lines[1:]:
        src, complete, width = line.rsplit(" ", 2)
        images.append((src, complete == "true", int(width)))
    text = re.search(r'<pre id="skstoch-render-text">(.*?)</pre>', proc.stdout, re.S)
    return title, images, html.unescape(text.group(1)) if text else ""


# what a reader must never see in prose: TeX that no renderer turned into a formula, and
# reStructuredText markup that was not parsed (``literal`` inside **bold**, say)
_RAW_MARKUP = re.compile(r"\\(?:frac|sum|sqrt|mathbf|mathrm|lambda|alpha|left|right|\(|\[)"
                         r"|\$\$|``")


def _raw_markup(text):
    return sorted({text[max(m.start() - 40, 0):m.end() + 40].replace("\n", " ")
                   for m in _RAW_MARKUP.finditer(text)})


@pytest.mark.slow
@pytest.mark.parametrize("page, min_images, title", [
    ("index.html", 0, "skstoch"),
    ("auto_examples/index.html", 1, "Examples"),
    ("auto_examples/plot_quick_tour.html", 4, "quick tour"),
    ("benchmarks.html", 0, "Benchmarks"),
    ("getting_started.html", 0, "Getting started"),
    ("reproducing.html", 0, "Reproducing"),
    ("scaling_out.html", 0, "Scaling out"),
    *[(f"user_guide/{page.stem}.html", 0, "skstoch")
      for page in sorted((DOC / "user_guide").glob("*.rst"))],
    *[(f"gen_modules/skstoch.{name}.html", 0, name)
      for name in sorted(skstoch.__all__) if name[0].isupper()],
])
def test_pages_render_in_headless_chromium(built_site, page, min_images, title):
    chromium = _chromium()
    if chromium is None:
        pytest.skip("no chromium on this machine (CI installs Debian's chromium: .ci/run)")
    if page == "benchmarks.html" and any((ROOT / "benchmarks" / "results").glob("*.json")):
        min_images = 1  # one timing chart per committed result
    found_title, images, text = _render(chromium, built_site / page)
    assert title.lower() in found_title.lower()
    assert not _raw_markup(text), f"{page}: raw markup visible: {_raw_markup(text)[:5]}"
    content = [im for im in images if "logo" not in im[0]]
    assert len(content) >= min_images, f"{page}: {len(content)} images, expected {min_images}+"
    broken = [src for src, complete, width in images if not complete or width == 0]
    assert not broken, f"{page}: images that did not load: {broken}"

