# Probe (run with the static policy switched off, to test the sandbox behind it): try to leave the
# scratch folder, read what the process must not see, and reach the network. The test fills in the
# MARKER_DIR, FORBIDDEN and PORT constants. Every attempt that succeeds is named in the ValueError
# this raises on its first call; when all are denied it behaves like the honest solution it is
# appended to.
import os
import socket

MARKER_DIR = "{marker_dir}"
FORBIDDEN = {forbidden!r}
PORT = {port}


def _attempts():
    succeeded = []
    for target in (os.path.join(MARKER_DIR, "written-by-solution"), "/etc/d2k-written-by-solution"):
        try:
            with open(target, "w") as handle:
                handle.write("x")
            succeeded.append(f"wrote {{target}}")
        except OSError:
            pass
    try:
        with open("/proc/self/environ", "rb") as handle:
            environ = handle.read()
        for name in (b"OPENAI_API_KEY", b"D2K_PROBE_VISIBLE"):
            if name in environ:
                succeeded.append(f"read {{name.decode()}} from /proc/self/environ")
    except OSError:
        pass
    for path in FORBIDDEN:
        if os.path.exists(path):
            succeeded.append(f"saw {{path}}")
    try:
        with socket.create_connection(("127.0.0.1", PORT), timeout=2):
            succeeded.append(f"connected to 127.0.0.1:{{PORT}}")
    except OSError:
        pass
    for pid in os.listdir("/proc"):
        try:
            with open(f"/proc/{{pid}}/cmdline", "rb") as handle:
                if b"workbench.harness.checker" in handle.read():
                    succeeded.append("saw the checker's process")
                    break
        except OSError:
            pass
    return succeeded


_ESCAPED = _attempts()


def run(G, steps):
    if _ESCAPED:
        raise ValueError("escaped: " + "; ".join(_ESCAPED))
    return honest_run(G, steps)
