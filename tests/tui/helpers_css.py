"""Every app a TUI test builds parses the same Textual CSS again (its own, every widget's DEFAULT_CSS, each
screen's), and Textual parses it all once more at every re-parse (a screen's CSS first loaded, the theme's
variables applied), in a new `Stylesheet` whose parse cache starts empty: some 20 parses an app, a tenth of a
TUI test's CPU.

`shared_parse_rules` gives `Stylesheet._parse_rules` one cache for the whole test process, keyed by what the
parse depends on: the CSS, where it was read from, its default/tie-break/scope flags (Textual's own key) and the
stylesheet's variables (the theme's colours, which Textual's per-stylesheet cache leaves out because a new
stylesheet is made when they change). The rule sets are shared as Textual shares them between the parses of one
stylesheet: read, never changed, by `Stylesheet.apply`.
"""

from __future__ import annotations

from collections.abc import Callable

from textual.css.model import RuleSet
from textual.css.stylesheet import Stylesheet
from textual.css.types import CSSLocation

ParseRules = Callable[[Stylesheet, str, CSSLocation, bool, int, str], list[RuleSet]]
ParsedRules = dict[tuple[object, ...], list[RuleSet]]


def shared_parse_rules(parse_rules: ParseRules, parsed: ParsedRules) -> ParseRules:
    """`parse_rules` (Textual's `Stylesheet._parse_rules`) with its results kept in `parsed` for every stylesheet."""

    def cached(
        stylesheet: Stylesheet,
        css: str,
        read_from: CSSLocation,
        is_default_rules: bool = False,
        tie_breaker: int = 0,
        scope: str = "",
    ) -> list[RuleSet]:
        key = (css, read_from, is_default_rules, tie_breaker, scope, tuple(stylesheet._variables.items()))
        rules = parsed.get(key)
        if rules is None:  # a parse that fails raises and is not kept, as in Textual's cache
            rules = parsed[key] = parse_rules(stylesheet, css, read_from, is_default_rules, tie_breaker, scope)
        return rules

    return cached
