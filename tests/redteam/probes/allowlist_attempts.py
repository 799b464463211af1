# Probe (run with the static policy switched off, to test the sandbox behind it): at import, look for
# what the allow-list sandbox must not show, and raise with what was found as JSON after "PROBE ", so
# that the evaluation fails fast with the findings in its message. The test fills in OTHER_CHECKOUT (a
# copy of the project that the harness was not told about), UNNAMED (a folder of the machine that
# nothing names), HOST_PATHS (folders with user data and files of /etc that must not be visible) and
# SECRETS (the paths the harness hides: none may appear on the command line of pid 1).
import json
import os
import sys

OTHER_CHECKOUT = "{other_checkout}"
UNNAMED = "{unnamed}"
HOST_PATHS = {host_paths!r}
SECRETS = {secrets!r}


def _read(path):
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        return type(exc).__name__.encode()


def _look():
    found = {{}}
    expert = os.path.join(OTHER_CHECKOUT, "tasks", "muon_orthogonalize", "expert.py")
    found["other_checkout"] = os.path.exists(OTHER_CHECKOUT)
    found["other_expert_read"] = _read(expert).decode(errors="replace")[:40]
    sys.path.insert(0, os.path.dirname(expert))
    try:
        import expert as other_expert  # noqa: F401

        found["other_expert_imported"] = True
    except Exception:
        found["other_expert_imported"] = False
    found["unnamed"] = os.path.exists(UNNAMED)
    found["host_paths"] = sorted(p for p in HOST_PATHS if os.path.exists(p))
    found["passwd_lines"] = _read("/etc/passwd").count(b"\n")  # the host's, or the sandbox's one line
    init = _read("/proc/1/cmdline").decode(errors="replace").split("\0")
    own = _read("/proc/self/cmdline").decode(errors="replace").split("\0")
    rest = init[: len(init) - len(own)] if init[len(init) - len(own) :] == own else init
    found["init_argv"] = rest[:6]  # what precedes the process's own command line (the message is cut at 2000)
    found["init_argc"] = len(rest)
    found["init_names"] = sorted(s for s in SECRETS if any(s in part for part in init))
    found["init_environ"] = sorted(
        item.split("=", 1)[0] for item in _read("/proc/1/environ").decode(errors="replace").split("\0") if "=" in item
    )
    return found


raise ValueError("PROBE " + json.dumps(_look()))


def run(G, steps):
    raise AssertionError("never reached: the probe raises at import")
