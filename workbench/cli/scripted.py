"""`python -m workbench.cli.scripted ARGS...`: the d2k-workbench CLI with every agent session run in this
process answered by the scripted Muon session (`workbench.agent.testing.muon_script`), whatever
--provider/--model say. For demos, the shipped agent example and end-to-end tests; no API key is used."""

from __future__ import annotations

import sys

from workbench.agent.testing import ScriptedProvider, muon_script
from workbench.cli import app
from workbench.cli.common import CliServices
from workbench.llm import Provider


def scripted_provider(provider: str, model: str, base_url: str | None) -> Provider:
    return ScriptedProvider(muon_script(), model=model)


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    app(args=args, prog_name="d2k-workbench", obj=CliServices(provider_factory=scripted_provider))


if __name__ == "__main__":
    main()
