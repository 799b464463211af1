"""Which environment variables hold secrets (API keys, tokens, passwords), by name.

One pattern for the harness (a solution's process gets none of them) and the session (their values are
kept out of the log, the commits and the driver's output). Imports nothing.
"""

import re

SECRET_NAME = re.compile(r"(_KEY|_TOKEN|SECRET|PASSWORD|CREDENTIAL)|^(OPENAI|ANTHROPIC|AWS|AZURE|GOOGLE|HF)_", re.I)
