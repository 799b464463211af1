"""Two campaign sessions at once on a two-GPU machine, one per GPU, against the same sessions one at a time.

1. Sandbox: inside bubblewrap with CUDA_VISIBLE_DEVICES=i and CUDA_DEVICE_ORDER=PCI_BUS_ID (as a campaign
   pins a session), only /dev/nvidia<minor of i> is bound; CUDA must still work there and see one GPU.
2. A scripted model on 127.0.0.1 (tests/llm/fake_servers.py, OpenAI Chat wire format) writes each task's
   expert.py as the solution and submits; a campaign of two sessions (two tasks) runs with `gpus = "all"`
   (both at once, one per GPU), then the same two sessions in a second campaign with `gpus = [0]` (one at
   a time). Every evaluation report records its GPU's UUID.
Prints per task and workload the latency of both runs and their ratio, the GPUs used, and the wall times;
exit 1 when a latency differs by more than 3% or the concurrent sessions shared a GPU.
Usage (GPU, two GPUs): python3 scripts/gpu_campaign_check.py [TASK TASK]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO), str(REPO / "tests")]

from llm.fake_servers import FakeModelServer, ModelTurn, ToolCall  # noqa: E402

from workbench.harness.host import sandbox  # noqa: E402

KEY = "sk-gpu-campaign-check"


def gpu_count() -> int:
    done = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, check=False)
    return sum(1 for line in done.stdout.splitlines() if line.startswith("GPU "))


def sandbox_probe(gpus: int) -> list[str]:
    lines = []
    probe = "import torch; print(torch.cuda.device_count(), torch.cuda.get_device_properties(0).uuid, flush=True)"
    for index in [str(i) for i in range(gpus)]:
        env = {"PATH": "/usr/bin:/bin", "HOME": "/tmp", "CUDA_VISIBLE_DEVICES": index, "CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
        env |= {k: os.environ[k] for k in ("PYTHONPATH", "LD_LIBRARY_PATH") if k in os.environ}
        command, info = sandbox.wrap(
            [sys.executable, "-c", "import glob; print(sorted(glob.glob('/dev/nvidia[0-9]*')))\n" + probe],
            device="cuda:0", env=env, readable=[Path(p) for p in sys.path if p and Path(p).is_dir()],
        )  # fmt: skip
        done = subprocess.run(command, env=sandbox.launcher_env(), capture_output=True, text=True, timeout=120, check=False)
        out = " | ".join((done.stdout + done.stderr).strip().splitlines()[-3:])
        lines.append(f"sandbox CUDA_VISIBLE_DEVICES={index}: rc {done.returncode}: {out} [{info.detail}]")
    return lines


def responder(tasks: list[str]):  # type: ignore[no-untyped-def]
    experts = {t: (REPO / "tasks" / t / "expert.py").read_text() for t in tasks}

    def answer(body: Any) -> ModelTurn:
        messages = body.get("messages", [])
        opening = json.dumps([m.get("content") for m in messages if m.get("role") in ("system", "user")][:2])
        task = next(t for t in sorted(tasks, key=len, reverse=True) if t in opening)
        if sum(1 for m in messages if m.get("role") == "assistant") == 0:
            return ModelTurn(tool_calls=[ToolCall("write_file", {"path": "solution.py", "content": experts[task]})])
        return ModelTurn(tool_calls=[ToolCall("submit", {"note": "the expert kernels"})])

    return answer


def campaign_file(path: Path, name: str, base_url: str, tasks: list[str], gpus: str) -> Path:
    path.write_text(
        f'name = "{name}"\nsessions_dir = "sessions"\ntasks = {json.dumps(tasks)}\nguidance = ["none"]\nmax_turns = 4\n'
        f'device = "cuda"\ngpus = {gpus}\nretries = 0\nallow_unpriced = true\n\n[[models]]\nprovider = "openai"\n'
        f'model = "scripted"\nbase_url = "{base_url}"\n'
    )
    return path


def run(path: Path) -> tuple[float, str]:
    env = {**os.environ, "OPENAI_API_KEY": KEY}
    start = time.time()
    done = subprocess.run([sys.executable, "-m", "workbench", "campaign", "run", str(path)], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=560, check=False)  # fmt: skip
    return time.time() - start, (done.stdout + done.stderr)[-1500:]


def reports(sessions: Path) -> dict[str, list[dict[str, Any]]]:
    """Per session: its passed evaluation reports (results.jsonl), each with workloads and device_uuid."""
    out: dict[str, list[dict[str, Any]]] = {}
    for session in sorted(p for p in sessions.iterdir() if (p / "events.jsonl").is_file()):
        found = []
        for line in (session / "events.jsonl").read_text().splitlines():
            event = json.loads(line)
            if event.get("type") == "eval_finished" and event["report"]["status"] == "passed":
                found.append(event["report"])
        out[session.name] = found
    return out


def main(argv: list[str]) -> int:
    tasks = argv or ["rmsnorm_bwd", "add_rmsnorm_fp8_quant"]
    gpus = gpu_count()
    print(f"{gpus} GPU(s)" + ("" if gpus >= 2 else ": both campaigns run one session at a time (a repeatability check)"))
    for line in sandbox_probe(gpus):
        print(line, flush=True)
    work = Path(tempfile.mkdtemp(prefix="d2k-gpu-campaign-"))
    with FakeModelServer("openai-chat") as server:
        server.respond_with(responder(tasks))
        wall_par, out_par = run(campaign_file(work / "par.toml", "par", server.base_url, tasks, '"all"'))
        print(out_par.strip().splitlines()[-1] if out_par.strip() else "(no output)", flush=True)
        wall_seq, out_seq = run(campaign_file(work / "seq.toml", "seq", server.base_url, tasks, "[0]"))
        print(out_seq.strip().splitlines()[-1] if out_seq.strip() else "(no output)", flush=True)
    par, seq = reports(work / "sessions"), {}
    seq = {k: v for k, v in par.items() if k.startswith("seq--")}
    par = {k: v for k, v in par.items() if k.startswith("par--")}
    print(f"wall: both at once {wall_par:.0f} s, one at a time {wall_seq:.0f} s")
    bad = 0
    uuids = {}
    print(f"{'task':24s} {'workload':30s} {'at once ms':>11s} {'alone ms':>10s} {'ratio':>7s}  GPU (at once)")
    for task in tasks:
        a = next((v[-1] for k, v in par.items() if f"--{task}--" in k and v), None)
        b = next((v[-1] for k, v in seq.items() if f"--{task}--" in k and v), None)
        if a is None or b is None:
            print(f"{task}: no passed evaluation (at once: {a is not None}, alone: {b is not None})")
            bad += 1
            continue
        uuids[task] = a.get("device_uuid", "")
        for wa, wb in zip(a["workloads"], b["workloads"], strict=True):
            la, lb = wa["latency"]["median_ms"], wb["latency"]["median_ms"]
            ratio = la / lb
            bad += abs(ratio - 1) > 0.03
            print(f"{task:24s} {wa['name']:30s} {la:11.4f} {lb:10.4f} {ratio:7.3f}  {uuids[task][:20]}")
    if gpus >= 2 and len(set(uuids.values())) != len(uuids):
        print(f"the concurrent sessions shared a GPU: {uuids}")
        bad += 1
    for name, events in {**par, **seq}.items():
        print(f"  {name}: {len(events)} passed evaluation(s) on {sorted({e.get('device_uuid', '')[:20] for e in events})}")
    print("OK" if not bad else f"{bad} problem(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
