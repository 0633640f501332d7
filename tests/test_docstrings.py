"""Docstrings of the public API: numpydoc sections present and the Examples doctested.

Every public class (``skstoch.__all__``) needs the numpydoc sections Parameters, Attributes,
Examples and References, documents every constructor parameter, and its examples (class
and public methods) pass under doctest.  Sections still missing are listed in
``PENDING_SECTIONS`` with the reason; the list is strict: once a section is written the test
fails until its entry is removed, so the list only shrinks.
"""
import doctest
import inspect

import numpy as np
import pytest

import skstoch


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
