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
_PROTECTED = re.compile(r"``.+?``|:[\w:+-]+:`[^`]*`|`[^`]+`_{0,2}")
_TRAILING_UNDERSCORE = re.compile(r"(?<![\\\w])([A-Za-z]\w*?)_(?![\w`])")
_BAR = re.compile(r"(?<!\\)\|")
_FIELD = re.compile(r"^(\*{0,2}[\w, ]+\*{0,2}) : (.*)$")


def _escape_span(text):
    text = _TRAILING_UNDERSCORE.sub(r"\1\\_", text)
    return _BAR.sub(r"\\|", text)


def escape_text(text, in_literal=False):
    """Escape the plain-text parts of one line (inline literals and roles untouched).

    An inline literal may span lines: ``in_literal`` says the line starts inside one, and the
    second return value whether the line ends inside one.
    """
    out, pos = [], 0
    if in_literal:
        close = text.find("``")
        if close < 0:
            return text, True
        out.append(text[:close + 2])
        pos = close + 2
    for match in _PROTECTED.finditer(text, pos):
        out.append(_escape_span(text[pos:match.start()]))
        out.append(match.group(0))
        pos = match.end()
    rest = text[pos:]
    opened = rest.find("``")
    if opened >= 0:   # a literal that closes on a later line
        out.append(_escape_span(rest[:opened]) + rest[opened:])
        return "".join(out), True
    out.append(_escape_span(rest))
    return "".join(out), False


def _indent(line):
    return len(line) - len(line.lstrip())


def escape_docstring(lines):
    """Return the escaped lines of a dedented numpydoc docstring."""
    result = []
    block_indent = None  # inside a literal block / directive body deeper than this
    in_literal = False   # inside an inline literal that started on an earlier line
    for line in lines:
        stripped = line.strip()
        if not stripped:
            in_literal = False   # inline markup never spans paragraphs
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
        field = _FIELD.match(line) if _indent(line) == 0 and not in_literal else None
        if field:
            escaped, in_literal = escape_text(field.group(2))
            result.append(f"{field.group(1)} : {escaped}")
        else:
            escaped, in_literal = escape_text(line, in_literal)
            result.append(escaped)
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
