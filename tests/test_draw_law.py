"""The law check of drawn outputs (task.toml [sampling], harness/checker/draws.py): its statistics, its power
against wrong samplers at a registered workload's pool size, its false-failure rate on right ones, and the
catalog's rules for a task that declares draws. The samplers here are written in torch (milliseconds a call);
the task's kernels and the red-team kernels are run under the interpreter in tests/test_topk_topp_sampling.py
and tests/redteam/test_topk_topp_sampling_redteam.py."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from unittest.mock import patch

import pytest
import torch

from workbench.catalog import Catalog
from workbench.catalog.errors import CatalogError
from workbench.harness.checker.draws import DrawPool, DrawsInvalid, ks_uniform, repeats_tail, transforms
from workbench.harness.protocol.task_files import import_file

REPO = Path(__file__).resolve().parent.parent
TASK = Catalog(REPO / "tasks", REPO / "guidance").task("topk_topp_sampling")
REFERENCE = import_file(TASK.file("reference.py"), "_test_draw_law_reference")
MAKE = import_file(TASK.file("inputs.py"), "_test_draw_law_inputs").make_inputs

Sampler = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, int], torch.Tensor]


# -- the statistics ---------------------------------------------------------------------------------
def test_ks_matches_known_values_and_rejects_what_is_not_uniform() -> None:
    d, _ = ks_uniform(torch.tensor([0.1, 0.4, 0.7], dtype=torch.float64))
    assert d == pytest.approx(0.3, abs=1e-12)  # max(1/3 - 0.1, 2/3 - 0.4, 1 - 0.7) = 0.3
    uniform = torch.rand(4000, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    assert ks_uniform(uniform)[1] > 1e-3
    assert ks_uniform(uniform.sqrt())[1] < 1e-12  # Beta(2, 1)
    assert ks_uniform(uniform * 0.95)[1] < 1e-6  # 5% of the mass missing at the top


def test_the_repeat_tail_is_the_poisson_binomial_law() -> None:
    odds = torch.tensor([0.5, 0.5, 0.5])
    assert repeats_tail(0, odds) == pytest.approx(1.0)
    assert repeats_tail(2, odds) == pytest.approx(0.5)  # 3/8 + 1/8
    assert repeats_tail(3, odds) == pytest.approx(0.125)
    assert repeats_tail(2, torch.tensor([1.0, 1.0])) == pytest.approx(1.0)  # certain repeats say nothing


def test_a_draw_outside_the_support_fails_at_once_and_names_its_row() -> None:
    intervals = torch.tensor([[0.0, 0.5], [0.3, 0.3], [0.2, float("nan")]], dtype=torch.float64)
    with pytest.raises(DrawsInvalid, match=r"2 of 3 draws .* \(first at row 1\)"):
        transforms(intervals, torch.Generator().manual_seed(0))


# -- power and size on the task's law, at a registered workload's pool size -------------------------
def _pool(sampler: Sampler, calls: int, rows: int = 64, vocab: int = 4099, seed: int = 0) -> DrawPool:
    """`calls` pairs of calls of `sampler` (fresh inputs, then the same under another seed), as the harness
    makes them, pooled with the task's intervals."""
    pool = DrawPool(secret=seed, workload="w", output="tokens")
    law = REFERENCE.target_probs
    # the law of one call's inputs, computed once for both seeds, the samplers and draw_intervals (each asks
    # for it; its sorts were two thirds of a pool's time). The memo holds the arguments too, so an id is never
    # reused for another tensor while it lives; it is emptied for each call's inputs.
    memo: dict[tuple[int, int, int], tuple[tuple[torch.Tensor, ...], torch.Tensor]] = {}

    def once(logits: torch.Tensor, k: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
        key = (id(logits), id(k), id(p))
        if key not in memo:
            memo[key] = ((logits, k, p), law(logits, k, p))
        return memo[key][1]

    for call in range(calls):
        made = MAKE({"B": rows, "V": vocab}, 1000 * seed + call, "cpu")
        memo.clear()
        first = None
        with patch.object(REFERENCE, "target_probs", once):
            for draw_seed in (int(made["seed"]), int(made["seed"]) + 7919):
                args = {**made, "seed": draw_seed}
                tokens = sampler(args["logits"], args["top_k"], args["top_p"], draw_seed)
                first = pool.add(REFERENCE.draw_intervals({"tokens": tokens}, args), first)
    return pool


def _verdict(pool_maker: Callable[[], DrawPool]) -> str | None:
    try:
        return pool_maker().failure(1e-6)
    except DrawsInvalid as exc:
        return str(exc)


def _from_probs(probs: torch.Tensor, seed: int) -> torch.Tensor:
    return torch.multinomial(probs.float(), 1, generator=torch.Generator().manual_seed(seed)).squeeze(1)


def _right(logits: torch.Tensor, k: torch.Tensor, p: torch.Tensor, seed: int) -> torch.Tensor:
    return _from_probs(REFERENCE.target_probs(logits, k, p), seed)


def _greedy(logits: torch.Tensor, k: torch.Tensor, p: torch.Tensor, seed: int) -> torch.Tensor:
    return logits.argmax(dim=-1)


def _seed_ignored(logits: torch.Tensor, k: torch.Tensor, p: torch.Tensor, seed: int) -> torch.Tensor:
    return _right(logits, k, p, 5)


def _one_uniform_per_call(logits: torch.Tensor, k: torch.Tensor, p: torch.Tensor, seed: int) -> torch.Tensor:
    """Inverse CDF with one uniform shared by every row (tokens by decreasing probability)."""
    probs = REFERENCE.target_probs(logits, k, p)
    q, order = probs.sort(dim=-1, descending=True, stable=True)
    u = torch.rand((), generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    at = (q.cumsum(dim=-1) < u).sum(dim=-1, keepdim=True).clamp(max=probs.shape[1] - 1)
    return order.gather(1, at).squeeze(1)


def _hot(logits: torch.Tensor, k: torch.Tensor, p: torch.Tensor, seed: int) -> torch.Tensor:
    """A temperature of 0.8 applied by mistake (the filtered set right, the law inside it sharper)."""
    probs = REFERENCE.target_probs(logits, k, p)
    sharper = torch.where(probs > 0, (logits.double() / 0.8).softmax(dim=-1), 0.0)
    return _from_probs(sharper / sharper.sum(dim=-1, keepdim=True), seed)


def _no_top_p(logits: torch.Tensor, k: torch.Tensor, p: torch.Tensor, seed: int) -> torch.Tensor:
    return _right(logits, k, torch.ones_like(p), seed)


def _top_p_before_top_k(logits: torch.Tensor, k: torch.Tensor, p: torch.Tensor, seed: int) -> torch.Tensor:
    """The filters swapped: the nucleus of the whole softmax, then top-k inside it."""
    V = logits.shape[1]
    nucleus = REFERENCE.target_probs(logits, torch.full_like(k, V), p) > 0
    kept = torch.where(nucleus, logits, float("-inf"))
    return _right(torch.where(nucleus, logits, kept.min() - 1e4), k, torch.ones_like(p), seed)


WRONG: dict[str, Sampler] = {
    "greedy": _greedy,
    "seed_ignored": _seed_ignored,
    "one_uniform_per_call": _one_uniform_per_call,
    "temperature_0.8": _hot,
    "no_top_p": _no_top_p,
    "top_p_before_top_k": _top_p_before_top_k,
}


@pytest.mark.slow  # a pool of 4096 draws each (2-13 s on a 2-core CPU)
@pytest.mark.parametrize("name", sorted(WRONG))
def test_every_wrong_sampler_fails_a_registered_workloads_pool(name: str) -> None:
    """32 pairs of calls of 64 rows (4096 draws, 2048 paired): the harness's pool at B = 64."""
    assert _verdict(lambda: _pool(WRONG[name], calls=32)) is not None, name


@pytest.mark.slow  # a pool of 4096 draws (about 8 s on a 2-core CPU)
@pytest.mark.parametrize("sampler", ["law", "reference"])
def test_right_samplers_pass_a_registered_workloads_pool(sampler: str) -> None:
    """The false-failure side: the law itself and the reference (vLLM's exponential race, a different way of
    drawing) each pass a pool (the check's size is 1e-6 per workload, so any failure here is a bug; 10 pools
    each passed when the check was written, docs/tolerance-topk_topp_sampling.md)."""
    right = _right if sampler == "law" else REFERENCE.reference
    assert _verdict(lambda: _pool(right, calls=32, seed=7)) is None


# -- the catalog's rules ------------------------------------------------------------------------------
def _copy_with(tmp_path: Path, old: str, new: str) -> Catalog:
    """The task's folder copied with one line of its task.toml changed."""
    folder = tmp_path / "tasks" / "topk_topp_sampling"
    folder.mkdir(parents=True)
    for path in TASK.file("task.toml").parent.glob("*.*"):
        (folder / path.name).write_bytes(path.read_bytes())
    text = TASK.file("task.toml").read_text()
    assert text.count(old) == 1, old
    (folder / "task.toml").write_text(text.replace(old, new))
    return Catalog(tmp_path / "tasks", tmp_path / "guidance")


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('outputs = ["tokens"]', 'outputs = ["token"]', "not outputs of run"),
        ('seed = "seed"', 'seed = "top_k"', "free integer scalar input"),
        ("deterministic = true", "deterministic = false", "checks.deterministic"),
        ("input_scale = 0.0", "input_scale = 2.0", "input_scale = 0"),
        ("min_draws = 4096", "min_draws = 10", "min_draws"),
    ],
)
def test_a_sampling_task_with_a_bad_declaration_is_refused(old: str, new: str, message: str, tmp_path: Path) -> None:
    catalog = _copy_with(tmp_path, old, new)
    with pytest.raises(CatalogError, match=message):
        catalog.task("topk_topp_sampling")


def test_the_declaration_round_trips(tmp_path: Path) -> None:
    assert _copy_with(tmp_path, "alpha = 1e-6", "alpha = 1e-6").task("topk_topp_sampling").spec == TASK.spec
