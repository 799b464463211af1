"""Source and diff panes (virtualised lines), and the highlighting that workers do before showing them."""

from __future__ import annotations

from rich.syntax import Syntax
from rich.text import Text

from workbench.tui.widgets.lines_view import LinesView

DIFF_STYLES = (("+++", "bold"), ("---", "bold"), ("@@", "cyan"), ("+", "green"), ("-", "red"))


def highlight_python(code: str) -> list[Text]:
    """Numbered, syntax-highlighted lines (call from a worker: ~10 ms for a few hundred lines)."""
    if not code:
        return []
    text = Syntax(code, "python", theme="ansi_dark").highlight(code)
    text.rstrip()
    lines = text.split("\n", allow_blank=True)
    width = len(str(len(lines)))
    return [Text.assemble((f"{n:>{width}} ", "dim"), line) for n, line in enumerate(lines, start=1)]


def highlight_diff(diff: str) -> list[Text]:
    lines = []
    for raw in diff.splitlines():
        style = next((s for prefix, s in DIFF_STYLES if raw.startswith(prefix)), "")
        lines.append(Text(raw, style=style))
    return lines


class CodeView(LinesView):
    """Shows highlighted lines; `text` holds exactly the text shown (empty when a placeholder is shown)."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.text = ""

    def on_mount(self) -> None:
        self.show("", [], "(nothing selected)")

    def show(self, text: str, lines: list[Text], placeholder: str = "") -> None:
        self.text = text
        self.set_lines(lines if text else [Text(placeholder or "(empty)", style="dim")])
