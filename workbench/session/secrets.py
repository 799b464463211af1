"""Secret values (API keys and tokens from the environment) kept out of everything a session stores.

A variable is secret when its name looks like one (`*_KEY`, `*_TOKEN`, `*SECRET*`, `*PASSWORD*`,
`*CREDENTIAL*`, and the OpenAI/Anthropic/AWS/... prefixes) or is named in D2K_SECRET_VARS (a comma-
separated list). Values shorter than 8 characters are ignored (too likely to occur by chance).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

from workbench.secret_names import SECRET_NAME

MIN_LENGTH = 8


def secret_values(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """name -> value of every secret-looking variable in environ (os.environ by default)."""
    env = os.environ if environ is None else environ
    named = {n.strip() for n in env.get("D2K_SECRET_VARS", "").split(",") if n.strip()}
    return {
        name: value for name, value in env.items() if (SECRET_NAME.search(name) or name in named) and len(value) >= MIN_LENGTH
    }


def redact(text: str, secrets: Mapping[str, str]) -> str:
    """text with every secret value (also as it appears inside a JSON string) replaced by its name."""
    for name, value in secrets.items():
        for form in {value, json.dumps(value)[1:-1]}:
            text = text.replace(form, f"[redacted {name}]")
    return text


def find_secret(data: bytes, secrets: Mapping[str, str]) -> str | None:
    """The name of a secret whose value occurs in data, or None."""
    for name, value in secrets.items():
        if value.encode() in data:
            return name
    return None
