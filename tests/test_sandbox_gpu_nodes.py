"""The sandbox binds only the pinned GPU's device node: a campaign session pinned to one GPU (by index in PCI
bus order) cannot open the others' /dev/nvidiaN, whatever it sets in its own environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from workbench.harness.host import sandbox


@pytest.fixture
def two_gpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake /proc/driver/nvidia/gpus: bus 0000:1b has minor 1, bus 0000:0a minor 0 (listed out of order)."""
    root = tmp_path / "gpus"
    for bus, minor in (("0000:1b:00.0", 1), ("0000:0a:00.0", 0)):
        (root / bus).mkdir(parents=True)
        (root / bus / "information").write_text(f"Model: \t NVIDIA H200\nDevice Minor: \t {minor}\nBus Location: \t {bus}\n")
    monkeypatch.setattr(sandbox, "NVIDIA_GPUS", root)
    return root


def test_an_index_in_pci_order_maps_to_its_device_minor(two_gpus: Path) -> None:
    pci = {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    assert sandbox.visible_gpu_minors({**pci, "CUDA_VISIBLE_DEVICES": "0"}) == {0}
    assert sandbox.visible_gpu_minors({**pci, "CUDA_VISIBLE_DEVICES": "1"}) == {1}
    assert sandbox.visible_gpu_minors({**pci, "CUDA_VISIBLE_DEVICES": "1,0"}) == {0, 1}
    assert sandbox.visible_gpu_minors({**pci, "CUDA_VISIBLE_DEVICES": ""}) == set()  # a job with no GPU
    # what cannot be told for sure binds every GPU, as before
    assert sandbox.visible_gpu_minors({**pci, "CUDA_VISIBLE_DEVICES": "2"}) is None  # no such GPU
    assert sandbox.visible_gpu_minors({**pci, "CUDA_VISIBLE_DEVICES": "GPU-8f3c"}) is None  # a UUID
    assert sandbox.visible_gpu_minors({"CUDA_VISIBLE_DEVICES": "1", "CUDA_DEVICE_ORDER": "FASTEST_FIRST"}) is None
    assert sandbox.visible_gpu_minors({**pci}) is None


def test_only_the_pinned_gpus_node_is_bound(two_gpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nodes = ["/dev/nvidia0", "/dev/nvidia1", "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"]
    monkeypatch.setattr(sandbox.glob, "glob", lambda pattern: [n for n in nodes if pattern == "/dev/nvidia*"])
    assert sandbox._gpu_device_nodes({1}) == ["/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia1", "/dev/nvidiactl"]
    assert sandbox._gpu_device_nodes(None) == sorted(nodes)
    args = sandbox._base_args(True, {0})
    bound = [args[i + 1] for i, a in enumerate(args) if a == "--dev-bind"]
    assert "/dev/nvidia0" in bound and "/dev/nvidia1" not in bound and "/dev/nvidiactl" in bound
