"""Render the documentation's formulas to MathML at build time (no JavaScript, no network).

Sphinx's default HTML math renderer (MathJax) loads a script from a CDN, so a site read
offline shows raw LaTeX.  This renderer converts every ``:math:`` role and ``.. math::``
block with `latex2mathml` while the site is built; browsers display MathML natively.  A
formula that cannot be converted is a build warning (and ``sphinx -W`` an error), never raw
LaTeX on the page.
"""
import re

from docutils import nodes
from latex2mathml.converter import convert
from sphinx.util import logging
from sphinx.util.math import get_node_equation_number

logger = logging.getLogger(__name__)


def _plain_text_escapes(latex):
    r"""``\text{a\_b}`` shows ``a_b`` (latex2mathml keeps escapes inside text verbatim)."""
    return re.sub(r"\\text\{([^{}]*)\}",
                  lambda m: r"\text{" + re.sub(r"\\([_%&#$])", r"\1", m.group(1)) + "}",
                  latex)


def _to_mathml(translator, node, latex, display):
    try:
        return convert(_plain_text_escapes(latex.strip()), display=display)
    except Exception as exc:  # latex2mathml raises its own exception types
        logger.warning("formula not converted to MathML (%s: %s): %s", type(exc).__name__,
                       exc, latex, location=node)
        return translator.encode(latex)


def visit_math(self, node):
    self.body.append(self.starttag(node, "span", "", CLASS="math"))
    self.body.append(_to_mathml(self, node, node.astext(), "inline") + "</span>")
    raise nodes.SkipNode


def visit_displaymath(self, node):
    self.body.append(self.starttag(node, "div", CLASS="math"))
    if node["number"]:
        number = get_node_equation_number(self, node)
        self.body.append(f'<span class="eqno">({number})</span>')
    # blank-line separated parts are separate equations, as with MathJax; a part with
    # ``\\`` line breaks becomes one aligned block
    for part in (p for p in node.astext().split("\n\n") if p.strip()):
        if r"\\" in part and r"\begin" not in part:
            part = r"\begin{aligned}" + part + r"\end{aligned}"
        self.body.append(_to_mathml(self, node, part, "block"))
    self.body.append("</div>\n")
    raise nodes.SkipNode


def setup(app):
    app.add_html_math_renderer("mathml", (visit_math, None), (visit_displaymath, None))
    return {"parallel_read_safe": True, "parallel_write_safe": True}
