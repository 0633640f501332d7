"""Sphinx extension: read plain-text docstrings as plain text.

scikit-learn style docstrings are written to be read with ``help()``: they name fitted
attributes with a trailing underscore (``ndarray of shape (n_iter_, n_components_)``) and
write absolute values as ``|r|``.  In reStructuredText both are markup (a hyperlink reference
and a substitution reference) and fail the ``-W`` build.  Before numpydoc parses a docstring
this hook escapes, outside inline literals, math roles and literal/directive blocks:

* a word ending in ``_`` that is not a deliberate reference (```text`_``) -> ``word\\_``;
* a ``|`` that is not part of a table or line block -> ``\\|``.

On a parameter/attribute line (``name : type``) only the type is escaped, so names stay
verbatim.  Everything else (roles, ``:math:``, ``.. math::`` blocks, doctest lines) is left
alone.  Docstrings that already use proper markup are unchanged.

Methods inherited from scikit-learn keep their text, but their ``:ref:`` cross-references
(to labels of scikit-learn's own user guide) become plain text.
"""
import re

# inline spans left untouched: ``literal``, :role:`text`, `interpreted`_ / `text`
_PROTECTED = re.compile(r"``.+?``|:[\w:+-]+:`[^`]*`|`[^`]*`_{0,2}")
_TRAILING_UNDERSCORE = re.compile(r"(?<![\\\w])([A-Za-z]\w*?)_(?![\w`])")
_BAR = re.compile(r"(?<!\\)\|")
_FIELD = re.compile(r"^(\*{0,2}[\w, ]+\*{0,2}) : (.*)$")


def _escape_span(text):
    text = _TRAILING_UNDERSCORE.sub(r"\1\\_", text)
    return _BAR.sub(r"\\|", text)


def escape_text(text):
    """Escape the plain-text parts of one line (inline literals and roles untouched)."""
    out, pos = [], 0
    for match in _PROTECTED.finditer(text):
        out.append(_escape_span(text[pos:match.start()]))
        out.append(match.group(0))
        pos = match.end()
    out.append(_escape_span(text[pos:]))
    return "".join(out)


def _indent(line):
    return len(line) - len(line.lstrip())


def escape_docstring(lines):
    """Return the escaped lines of a dedented numpydoc docstring."""
    result = []
    block_indent = None  # inside a literal block / directive body deeper than this
    for line in lines:
        stripped = line.strip()
        if block_indent is not None:
            if not stripped or _indent(line) > block_indent:
                result.append(line)
                continue
            block_indent = None
        if (not stripped or stripped.startswith((">>>", "...", "|", "+", ".. "))
                or re.fullmatch(r"[-=~^]{3,}", stripped)):
            if stripped.startswith(".. "):
                block_indent = _indent(line)
            result.append(line)
            continue
        if stripped.endswith("::"):
            block_indent = _indent(line)
        field = _FIELD.match(line) if _indent(line) == 0 else None
        if field:
            result.append(f"{field.group(1)} : {escape_text(field.group(2))}")
        else:
            result.append(escape_text(line))
    return result


_REF = re.compile(r":ref:`(?:([^`<]*?)\s*<[^`>]*>|([^`<]*))`")


def unlink_refs(lines):
    """``:ref:`text <label>``` -> ``text``: labels of another project's docs (scikit-learn's,
    in the docstrings of methods our estimators inherit) do not exist in ours."""
    return [_REF.sub(lambda m: m.group(1) or m.group(2), line) for line in lines]


def _process(app, what, name, obj, options, lines):
    if not (name.startswith("skstoch") and lines):
        return
    if not getattr(obj, "__module__", "skstoch").startswith("skstoch"):
        lines[:] = unlink_refs(lines)  # inherited from scikit-learn: plain text already
        return
    lines[:] = escape_docstring(lines)


def setup(app):
    # priority < 500: before numpydoc turns the sections into reStructuredText
    app.connect("autodoc-process-docstring", _process, priority=100)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
