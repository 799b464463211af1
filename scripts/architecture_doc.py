"""Write the import contract of pyproject.toml ([tool.importlinter]) into docs/architecture.md.

    python scripts/architecture_doc.py          rewrite the generated section of docs/architecture.md
    python scripts/architecture_doc.py --check  exit 1 when that section differs from the contract

The section lies between two HTML comments (BEGIN and END below); everything else in the document is
written by hand. Each layer's line is the first line of its module's docstring, so the map says what the
code says. `make test` runs `lint-imports` (the contract itself) and the test suite runs `--check`.
"""

from __future__ import annotations

import argparse
import ast
import sys
import tomllib
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
DOC = REPO / "docs" / "architecture.md"
BEGIN = "<!-- generated from [tool.importlinter] by scripts/architecture_doc.py: edit the contract, not this -->"
END = "<!-- end of the generated section -->"


def summary(module: str) -> str:
    """The first sentence-line of a module's docstring (a package's __init__.py)."""
    relative = Path(*module.split("."))
    source = REPO / relative / "__init__.py"
    if not source.is_file():
        source = REPO / relative.with_suffix(".py")
    docstring = ast.get_docstring(ast.parse(source.read_text(encoding="utf-8"))) or ""
    first = docstring.split("\n\n")[0].replace("\n", " ")
    return first.split(". ")[0].rstrip(".") + "."


def layer_lines(layers: list[str]) -> list[str]:
    lines = ["```", "top (may import anything below it)"]
    for layer in layers:
        independent = "|" in layer
        names = [n.strip() for n in layer.replace("|", ":").split(":")]
        joiner = " | " if independent else " : "
        lines.append("  " + joiner.join(n.removeprefix("workbench.") for n in names))
        for name in names:
            lines.append(f"      {name.removeprefix('workbench.')}: {summary(name)}")
    lines += ["bottom (imports nothing of the project)", "```"]
    return lines


def cycle_lines(contract: dict[str, Any]) -> list[str]:
    ancestors = ", ".join(f"`{m}`" for m in contract["ancestors"])
    lines = [
        f"- **{contract['name']}** (`{contract['id']}`): in {ancestors} and every package below it, no two of a"
        " package's modules or subpackages import each other, directly or through any chain."
    ]
    lines += [f"  Not yet checked inside: `{skipped}`." for skipped in contract.get("skip_descendants", [])]
    return lines


def contract_lines(contracts: list[dict[str, Any]]) -> list[str]:
    lines: list[str] = []
    for contract in contracts:
        if contract["type"] == "layers":
            continue
        if contract["type"] == "acyclic_siblings":
            lines.extend(cycle_lines(contract))
            continue
        sources = ", ".join(f"`{m}`" for m in contract["source_modules"])
        forbidden = ", ".join(f"`{m}`" for m in contract["forbidden_modules"])
        indirect = " (directly)" if contract.get("allow_indirect_imports") else " (directly or through any chain)"
        lines.append(f"- **{contract['name']}** (`{contract['id']}`): {sources} never import {forbidden}{indirect}.")
        for ignored in contract.get("ignore_imports", []):
            lines.append(f"  Named exception: `{ignored}`.")
    return lines


def generated() -> str:
    config = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]
    contracts = config["contracts"]
    (layers,) = [c for c in contracts if c["type"] == "layers"]
    lines = [
        BEGIN,
        "",
        f"**{layers['name']}** (`{layers['id']}`): a package imports only from the rows below its own; packages",
        "on one row joined by `|` never import each other, by `:` they may (top to bottom). Function-level",
        "imports count too.",
        "",
        *layer_lines(layers["layers"]),
        "",
        "The other contracts:",
        "",
        *contract_lines(contracts),
        "",
        END,
    ]
    return "\n".join(lines)


def rewritten(text: str) -> str:
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{DOC}: the markers of the generated section are missing")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return head + generated() + tail


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only say whether the document is current")
    args = parser.parse_args(argv)
    text = DOC.read_text(encoding="utf-8")
    new = rewritten(text)
    if args.check:
        if new != text:
            print(f"{DOC} is stale: run python scripts/architecture_doc.py", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
