"""Docstrings of the public API: numpydoc sections present and the Examples doctested.

Every public class (``skstoch.__all__``) needs the numpydoc sections Parameters, Attributes,
Examples and References, documents every constructor parameter, and its examples (class
and public methods) pass under doctest.  Sections still missing are listed in
``PENDING_SECTIONS`` with the reason; the list is strict: once a section is written the test
fails until its entry is removed, so the list only shrinks.
"""
import ast
import doctest
import inspect
import re
import warnings
from pathlib import Path

import numpy as np
import pytest

import skstoch
import skstoch.datasets


PUBLIC_CLASSES = sorted(name for name in skstoch.__all__
                        if inspect.isclass(getattr(skstoch, name)))
REQUIRED_SECTIONS = ("Parameters", "Attributes", "Examples", "References")

# class -> sections its author has not written yet (the docs report proposes their text)
PENDING_SECTIONS = {}
# class -> constructor parameters its docstring does not describe yet (same rule)
PENDING_PARAMETERS = {}
# class -> why its docstring example fails today (strict as well: fixed => remove the entry)
PENDING_DOCTEST_FAILURES = {}


def _doc(name):
    # numpydoc (in the "test" and "doc" extras) parses the sections
    docscrape = pytest.importorskip("numpydoc.docscrape",
                                    reason="numpydoc is needed to parse the docstring sections")
    return docscrape.ClassDoc(getattr(skstoch, name))


def test_public_classes_found():
    assert len(PUBLIC_CLASSES) >= 9
    assert set(PENDING_SECTIONS) <= set(PUBLIC_CLASSES)
    assert set(PENDING_PARAMETERS) <= set(PUBLIC_CLASSES)


@pytest.mark.parametrize("name", PUBLIC_CLASSES)
def test_numpydoc_sections(name):
    doc = _doc(name)
    assert doc["Summary"], f"{name}: no one-line summary"
    missing = {section for section in REQUIRED_SECTIONS if not doc[section]}
    assert missing == PENDING_SECTIONS.get(name, set()), (
        f"{name}: sections missing {sorted(missing)}, expected pending "
        f"{sorted(PENDING_SECTIONS.get(name, set()))} (update PENDING_SECTIONS)")


@pytest.mark.parametrize("name", PUBLIC_CLASSES)
def test_every_parameter_documented(name):
    cls = getattr(skstoch, name)
    documented = set()
    for param in _doc(name)["Parameters"]:
        documented.update(part.strip() for part in param.name.split(","))
    params = set(inspect.signature(cls).parameters) - {"self"}
    undocumented = params - documented
    assert undocumented == PENDING_PARAMETERS.get(name, set()), (
        f"{name}: parameters not in the docstring {sorted(undocumented)}, expected pending "
        f"{sorted(PENDING_PARAMETERS.get(name, set()))} (update PENDING_PARAMETERS)")
    assert not documented - params - {"**kwargs", "*args"}, (
        f"{name}: documents parameters it does not take: {sorted(documented - params)}")


def _doctests_of(name):
    cls = getattr(skstoch, name)
    finder = doctest.DocTestFinder(recurse=False)
    tests = finder.find(cls, f"skstoch.{name}", globs={"np": np})
    for attr, member in vars(cls).items():
        if attr.startswith("_") or not callable(member) or not getattr(member, "__doc__", None):
            continue
        tests += finder.find(member, f"skstoch.{name}.{attr}", globs={"np": np})
    return [t for t in tests if t.examples]


@pytest.mark.parametrize("name", PUBLIC_CLASSES)
def test_docstring_examples_pass(name):
    tests = _doctests_of(name)
    assert tests, f"{name}: no doctest examples found"
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in tests:
        runner.run(test)
    result = runner.summarize(verbose=False)
    if name in PENDING_DOCTEST_FAILURES:
        assert result.failed > 0, f"{name}: its example passes now, remove it from " \
                                  "PENDING_DOCTEST_FAILURES"
        pytest.xfail(PENDING_DOCTEST_FAILURES[name])
    assert result.failed == 0, f"{name}: {result.failed} of {result.attempted} doctest lines failed"


def test_module_docstring_examples_pass():
    """Doctests in the public modules' own docstrings and functions (datasets, utils)."""
    import skstoch.datasets

    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in doctest.DocTestFinder().find(skstoch.datasets, "skstoch.datasets"):
        runner.run(test)
    assert runner.summarize(verbose=False).failed == 0


def _literal(text):
    """A documented default as a value: ``1e-4``, ``'auto'``, ``"cv"``, ``None``, ``False``."""
    return ast.literal_eval(text.strip())


def _same_default(documented, actual):
    return type(documented) is type(actual) and documented == actual or (
        isinstance(actual, float) and isinstance(documented, (int, float))
        and float(documented) == actual)


@pytest.mark.parametrize("name", PUBLIC_CLASSES)
def test_documented_defaults_match_the_signature(name):
    """``default=...`` in a Parameters entry is the constructor's default (a grouped entry
    ``c1, c2 : float, default=1e-4, 0.1`` gives one value per name)."""
    cls = getattr(skstoch, name)
    signature = inspect.signature(cls).parameters
    wrong = []
    for param in _doc(name)["Parameters"]:
        names = [part.strip() for part in param.name.split(",")]
        match = re.search(r"default=(.*)$", param.type)
        if match is None:
            # only a group that defers to another class's entries has no default
            assert "As in :class:" in " ".join(param.desc), f"{name}.{param.name}: no default"
            continue
        values = match.group(1).split(",") if len(names) > 1 else [match.group(1)]
        assert len(values) == len(names), f"{name}.{param.name}: {match.group(1)!r}"
        for part, value in zip(names, values):
            if not _same_default(_literal(value), signature[part].default):
                wrong.append((part, value.strip(), signature[part].default))
    assert not wrong, f"{name}: documented default differs from the signature: {wrong}"


USER_GUIDE_DEFAULT_TABLES = {"lmnn.rst": "LMNNMetric", "s3gd.rst": "S3GDClassifier"}


def _default_table(page):
    """``(names, default text)`` rows of the page's 'parameter default ...' simple table."""
    lines = page.read_text().splitlines()
    head = next(i for i, line in enumerate(lines) if re.match(r"parameter\s+default\b", line))
    border = lines[head - 1]
    starts = [m.start() for m in re.finditer(r"=+", border)]
    rows = []
    for line in lines[head + 2:]:
        if line.startswith("="):
            break
        first, default = line[:starts[1]].strip(), line[starts[1]:starts[2]].strip()
        if first:
            rows.append([re.findall(r"``([^`]+)``", first)[0], default])
        elif default:
            rows[-1][1] += " " + default
    return rows


@pytest.mark.parametrize("page, name", sorted(USER_GUIDE_DEFAULT_TABLES.items()))
def test_user_guide_default_tables_match_the_signature(page, name):
    """The 'Parameters and defaults' tables of the user guide give the constructor's
    defaults (s3gd.rst said solver='hybrid' after the default became 'auto')."""
    signature = inspect.signature(getattr(skstoch, name)).parameters
    rows = _default_table(Path(__file__).resolve().parents[1] / "doc" / "user_guide" / page)
    assert len(rows) >= 5
    for names, default in rows:
        names = [part.strip() for part in names.split(",")]
        values = default.split(",") if len(names) > 1 else [default]
        for part, value in zip(names, values, strict=True):
            assert _same_default(_literal(value), signature[part].default), (
                f"{page}: {part} default {value.strip()!r}, the signature has "
                f"{signature[part].default!r}")


def _fitted_on_a_dataframe(name):
    """``name`` with default parameters fitted on small data with string column names."""
    pd = pytest.importorskip("pandas")
    from sklearn.base import is_regressor
    from sklearn.datasets import load_iris
    from sklearn.preprocessing import StandardScaler

    cls = getattr(skstoch, name)
    est = cls(random_state=0) if "random_state" in inspect.signature(cls).parameters else cls()
    if name == "OrdinalEmbedding":
        triplets = skstoch.datasets.make_triplets(n_objects=30, n_triplets=500, random_state=0)
        return est.fit(triplets[0] if isinstance(triplets, tuple) else triplets)
    X, y = load_iris(return_X_y=True)
    X = pd.DataFrame(StandardScaler().fit_transform(X), columns=["a", "b", "c", "d"])
    if name == "S3VMClassifier":
        y = np.where(y == 0, 0, 1)
        y[::3] = -1
    elif is_regressor(est):
        y = X["a"].to_numpy() + y
    return est.fit(X, y)


@pytest.mark.parametrize("name", PUBLIC_CLASSES)
def test_every_fitted_attribute_documented(name):
    """Every public attribute a fit sets is in the Attributes section (ConstrainedLassoCV's
    feature_names_in_ was not)."""
    documented = set()
    for attribute in _doc(name)["Attributes"]:
        documented.update(part.strip() for part in attribute.name.split(","))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = _fitted_on_a_dataframe(name)
    fitted = {key for key in vars(est) if key.endswith("_") and not key.startswith("_")}
    assert fitted - documented == set(), f"{name}: undocumented {sorted(fitted - documented)}"
