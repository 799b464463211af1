"""The paper-shaped tables, their renderers, and the PNG figures read back."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import pytest
from rich.console import Console

from workbench import paths
from workbench.errors import UsageError
from workbench.scoring import build_results, build_tables, collect, render_csv, render_json, render_markdown, rich_tables
from workbench.scoring.results import Results
from workbench.scoring.tables import TABLE_IDS, format_cell
from workbench.scoring.termcharts import curve_plot, task_bars

from .conftest import MUON, TOY, W1, W2

EXAMPLES = paths.REPO_ROOT / "sessions" / "examples"


@pytest.fixture(scope="module")
def results(bench_root: Path) -> Results:
    return build_results(collect([bench_root]).records)


@pytest.fixture(scope="module")
def examples() -> Results:
    return build_results(collect([EXAMPLES]).records)


def test_format_cell() -> None:
    assert format_cell(None, "speedup") == "-"
    assert format_cell(0.931, "percent") == "93.1%"
    assert format_cell(2.4913, "speedup") == "2.49x"
    assert format_cell(1.456, "score") == "1.46"
    assert format_cell(57.04, "js") == "57.0"
    assert format_cell(1234567, "tokens") == "1,234,567"
    assert format_cell(631.56, "usd") == "$631.56"
    assert format_cell("failed", "speedup") == "failed"


def test_table1_shape(results: Results) -> None:
    (table,) = build_tables(results, ["table1"])
    rows = {r["model"]: r for r in table.records()}
    assert list(rows) == ["model-a", "model-b", "baseline (reference)", "overall"]
    assert rows["model-a"]["correct[none]"] == "1/2" and rows["model-a"]["sperf[none]"] == pytest.approx(2.25)
    assert rows["model-b"]["sperf[L1]"] is None  # model-b ran no L1 session
    assert rows["baseline (reference)"]["sperf[none]"] == 1.0
    assert rows["overall"]["correct[none]"] == "3/4"
    assert rows["overall"]["sperf[none]"] == pytest.approx(math.sqrt(2.25 * 1.25))


def test_the_other_tables(results: Results) -> None:
    tables = {t.id: t for t in build_tables(results)}
    assert list(tables) == list(TABLE_IDS)
    t2 = {r["model"]: r for r in tables["table2"].records()}
    assert t2["model-a"]["js_design"] == pytest.approx(50.0) and t2["model-a"]["js_impl[none]"] == pytest.approx(30.0)
    assert t2["model-b"]["judged[none]"] == "1/2"
    assert t2["mean over models"]["js_impl[none]"] == pytest.approx(60.0)  # (30 + 90) / 2
    t5 = {r["model"]: r for r in tables["table5"].records()}
    assert t5["all pairs"]["fast_1[none]"] == 0.5 and t5["model-b"]["fast_1.5[none]"] == 0.0
    t6 = {(r["model"], r["config"]): r for r in tables["table6"].records()}
    assert t6[("model-a", "none")]["cache_read"] == 12000 and t6[("model-a", "none")]["cost_usd"] == pytest.approx(6.0)
    assert ("total", "none") in t6 and ("model-a", "design") in t6
    a_none = t6[("model-a", "none")]  # per turn 100 uncached, 1000 cache read, 10 cache write, 20 output (5 reasoning)
    buckets = ("uncached_input", "cache_read", "cache_write", "output", "reasoning")
    assert a_none["total_tokens"] == sum(a_none[b] for b in buckets) and a_none["reasoning"] * 4 == a_none["output"]
    assert any("output is the visible output only" in n for n in tables["table6"].notes)
    ablation = {r["model"]: r for r in tables["ablation"].records()}
    assert ablation["model-a"]["none"] == pytest.approx(2.25)
    assert ablation["model-a"]["L1"] == pytest.approx((math.sqrt(32) + 3) / 2)
    speedups = {r["task"]: r for r in tables["task_speedups"].records()}
    assert speedups[TOY]["model-a[none]"] == "failed (incorrect_numerical)"
    assert speedups[MUON]["model-a[none]"] == pytest.approx(4.0)
    turns = {(r["model"], r["config"]): r for r in tables["sperf_turns"].records()}
    assert turns[("model-a", "none")]["final"] == pytest.approx(2.05) and turns[("model-a", "none")]["5"] == pytest.approx(1.05)
    assert turns[("model-a", "none")]["1"] == pytest.approx(0.1)
    assert len(tables["workloads"].rows) == 2 + (2 + 2) + (2 + 1)  # a none muon, a L1 muon and toy, b muon and toy
    with pytest.raises(UsageError, match="unknown table"):
        build_tables(results, ["table3"])


def test_table6_turns_are_model_turns_of_agent_sessions_only(tmp_path: Path, bench_root: Path) -> None:
    # issue 58, item 5: a command session's revisions were shown as turns and added to the agents' in the total
    import shutil

    from workbench.scoring.testing import Step, scored_session, timed

    root = tmp_path / "sessions"
    shutil.copytree(bench_root, root)
    steps = [Step(rev, timed(MUON, {W1: (4, 4), W2: (8, 8)})) for rev in (1, 2, 3, 4, 5)]
    scored_session(root, MUON, steps, command="my-agent-cli", session_id="command-none-muon")  # 5 revisions, no model call
    (table,) = build_tables(build_results(collect([root]).records, configs=["none"]), ["table6"])
    rows = {(r["model"], r["config"]): r for r in table.records()}
    assert rows[("model-a", "none")]["turns"] == 12 and rows[("model-b", "none")]["turns"] == 6
    assert rows[("command: my-agent-cli", "none")]["turns"] is None  # shown as "-", not 5
    assert rows[("total", "none")]["turns"] == 12 + 6 and rows[("total", "none")]["sessions"] == 5
    assert any("turns are model turns" in note for note in table.notes)
    assert "command: my-agent-cli" in render_markdown([table], "")


def test_table4_lists_the_models_correct_everywhere(bench_root: Path) -> None:
    unguided = build_results(collect([bench_root]).records, configs=["none"])
    (table,) = build_tables(unguided, ["table4"])
    assert table.records() == [
        {"model": "model-b", "speedup[none]": pytest.approx(math.sqrt(1.5))},
        {"model": "geometric mean", "speedup[none]": pytest.approx(math.sqrt(1.5))},
    ]
    assert any("model-a" in note for note in table.notes)


def test_every_format_over_the_shipped_examples(examples: Results) -> None:
    tables = build_tables(examples)
    caption = examples.provenance.caption()
    shipped = [d for d in paths.examples_root().iterdir() if (d / "session.toml").is_file()]
    assert "NVIDIA H200" in caption and f"{len(shipped)} session(s)" in caption and "2026-11-30" in caption
    console = Console(width=200, record=True)
    for rendered in rich_tables(tables):
        console.print(rendered)
    text = console.export_text()
    assert "Table 1: correctness and Performance Score" in text and "0.57" in text and "[roofline]" in text
    markdown = render_markdown(tables, caption)
    assert (
        markdown.startswith(f"_{len(shipped)} session(s)")
        and "| model | correct none | correctness none | S_perf none |" in markdown
    )
    sections = render_csv(tables).split("\n\n")
    assert sections[0].startswith("# sessions:")
    one = list(csv.reader(io.StringIO(render_csv(build_tables(examples, ["table1"])))))
    assert one[0] == ["model", "correct none", "correctness none", "S_perf none"]
    replay = next(row for row in one if row[0].startswith("replay of"))
    assert float(replay[3]) == pytest.approx(0.5737, abs=1e-4)
    data = json.loads(render_json(examples, tables))
    assert data["provenance"]["device_model"] == "NVIDIA H200"
    assert set(data["tables"]) == set(TABLE_IDS)
    replay_score = next(row for row in data["results"]["scores"] if str(row["group"]).startswith("replay of"))
    assert replay_score["sperf"] == pytest.approx(0.5737, abs=1e-4)


def test_terminal_charts(results: Results, examples: Results) -> None:
    bars = task_bars(results, width=20).plain
    assert MUON in bars and "4.00x" in bars and "✗ incorrect_numerical" in bars
    assert "correct, untimed" in task_bars(examples).plain
    a = results.group_scores("model-a", "none")
    assert a is not None
    plot = curve_plot(a.curve, width=30, height=4).plain
    assert "final S'perf 2.05 at turn 7" in plot and "(turn)" in plot
    assert "no S'perf curve" in curve_plot(None).plain


def test_figures_read_back(tmp_path: Path, results: Results, examples: Results) -> None:
    from matplotlib.image import imread
    from matplotlib.text import Text

    from workbench.scoring.figures import ABLATION_X, ABLATION_Y, SPERF_Y, ablation_figure, sperf_figure, write_figures

    for label, data in (("bench", results), ("examples", examples)):
        written = write_figures(data, tmp_path / label)
        assert [p.name for p in written] == ["figure3_ablation.png", "figure4_sperf_turns.png"]
        for path in written:
            pixels = imread(path)
            height, width = pixels.shape[:2]
            # 8 x 4.8 in at 120 dpi; the S'perf figure is wider by its legend, beside the plot
            assert height == 576 and width == (960 if "ablation" in path.name else 1392)
            assert pixels[..., :3].std() > 0.05  # not blank
    ablation = ablation_figure(results)
    everything = {t.get_text() for t in ablation.findobj(Text)}  # every text object drawn in the figure
    assert {ABLATION_X, ABLATION_Y, "guidance", "model-a", "model-b"} <= everything
    (axes,) = ablation.axes
    assert (axes.get_xlabel(), axes.get_ylabel()) == (ABLATION_X, ABLATION_Y)
    assert [t.get_text() for t in axes.get_legend().get_texts()] == ["baseline (1.0)", "none", "L1"]
    texts = [t.get_text() for t in ablation.texts]
    assert any("7 session(s) · device: NVIDIA H200" in t for t in texts)  # provenance line
    sperf = sperf_figure(results)
    assert {"turn", SPERF_Y, "model-a (none)"} <= {t.get_text() for t in sperf.findobj(Text)}
    (axes,) = sperf.axes
    assert (axes.get_xlabel(), axes.get_ylabel()) == ("turn", SPERF_Y)
    legend = [t.get_text() for t in axes.get_legend().get_texts()]
    assert legend == ["model-a (none)", "model-a (L1)", "model-b (none)", "fallback (0.1)"]
    assert any("baseline:" in t.get_text() for t in sperf.texts)
    (example_axes,) = sperf_figure(examples).axes
    assert example_axes.get_xlabel() == "revision"


def test_figures_stay_readable_with_many_models_and_every_configuration(tmp_path: Path) -> None:
    # six models with long names, each in all four configurations: labels must not overlap, every
    # configuration must have a colour of its own, and the picture its stated size
    from matplotlib.colors import to_hex
    from matplotlib.image import imread

    from workbench.scoring.figures import CONFIG_COLOURS, DPI, ablation_figure, sperf_figure, write_figures
    from workbench.scoring.testing import Step, scored_session, timed

    root = tmp_path / "many"
    models = [f"provider-{i}/a-rather-long-model-name-{i}-2026-12-instruct" for i in range(6)]
    for i, model in enumerate(models):
        for j, config in enumerate(("none", "L1", "L1+L2", "L1+L2+L3")):
            scored_session(
                root, MUON, [Step(1 + j, timed(MUON, {W1: (4.0 - j * 0.5, 4 + i), W2: (2, 8)}))], model=model,
                guidance=config, session_id=f"s{i}{j}",  # type: ignore[arg-type]
            )  # fmt: skip
    results = build_results(collect([root]).records)
    figure = ablation_figure(results)
    renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]
    (axes,) = figure.axes
    boxes = [label.get_window_extent(renderer) for label in axes.get_xticklabels() if label.get_text()]
    assert len(boxes) == len(models)
    assert not any(a.overlaps(b) for k, a in enumerate(boxes) for b in boxes[k + 1 :])  # no label meets another
    colours = {}
    for container in axes.containers:
        config = container.get_label()
        colours[config] = {to_hex(bar.get_facecolor()) for bar in container}
    assert set(colours) == set(CONFIG_COLOURS) and all(len(c) == 1 for c in colours.values())
    assert len({next(iter(c)) for c in colours.values()}) == 4  # a colour per configuration
    sperf = sperf_figure(results)
    (curves,) = sperf.axes
    sperf_renderer = sperf.canvas.get_renderer()  # type: ignore[attr-defined]
    assert not curves.get_legend().get_window_extent(sperf_renderer).overlaps(curves.get_window_extent(sperf_renderer))
    styles = {(line.get_linestyle(), line.get_marker()) for line in curves.get_lines()}
    assert len(styles) >= len(models)  # each model's curves told apart by their style
    assert {to_hex(line.get_color()) for line in curves.get_lines() if not str(line.get_label()).startswith("fallback")} == {
        c.lower() for c in CONFIG_COLOURS.values()
    }
    for path in write_figures(results, tmp_path / "figs"):
        height, width = imread(path).shape[:2]
        assert height == int(4.8 * DPI) and width >= 8 * DPI  # wider with more models, never narrower


def test_a_configuration_without_bars_keeps_its_colour_in_the_legend(tmp_path: Path) -> None:
    # every session correct but untimed (the CPU): no bar is drawn, and the legend must still tell the
    # configurations apart, and the slots say why they are empty
    from matplotlib.colors import to_hex

    from workbench.scoring.figures import CONFIG_COLOURS, ablation_figure
    from workbench.scoring.testing import Step, scored_session, untimed

    for config in ("none", "L1"):
        scored_session(tmp_path, MUON, [Step(1, untimed(MUON, [W1, W2]))], model="m", guidance=config, session_id=f"u-{config}")  # type: ignore[arg-type]
    (axes,) = ablation_figure(build_results(collect([tmp_path]).records)).axes
    legend = axes.get_legend()
    colours = {
        t.get_text(): to_hex(h.get_facecolor())
        for t, h in zip(legend.get_texts(), legend.legend_handles, strict=True)
        if t.get_text() in CONFIG_COLOURS
    }
    assert colours == {"none": CONFIG_COLOURS["none"].lower(), "L1": CONFIG_COLOURS["L1"].lower()}
    assert [t.get_text() for t in axes.texts].count("untimed") == 2
