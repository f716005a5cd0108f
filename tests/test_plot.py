"""Figures and the HTML report, on copies of the recorded H200 databases (CPU only)."""

import hashlib
import json
import math
import shutil
import sqlite3
import statistics

import matplotlib

matplotlib.use("Agg")

import optuna  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from inductor_tune import cli, plot, report  # noqa: E402
from inductor_tune.show import study_rows  # noqa: E402
from inductor_tune.space import KernelSlot, TrialConfig  # noqa: E402
from inductor_tune.store import StoreError  # noqa: E402

RECORDED = {"quack": "db/quack.sqlite", "llm": "db/llm.sqlite"}


@pytest.fixture(scope="module")
def dbs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("db")
    out = {}
    for name, path in RECORDED.items():
        shutil.copy(path, folder / f"{name}.sqlite")
        out[name] = str(folder / f"{name}.sqlite")
    return out


@pytest.fixture(scope="module")
def quack(dbs):
    return plot.open_store(dbs["quack"])


@pytest.fixture(scope="module")
def llm(dbs):
    return plot.open_store(dbs["llm"])


def _ax():
    return Figure(figsize=(6, 4)).subplots()


def _digest(path):
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def _point(points, kernel, rows, cols):
    return next(p for p in points if (p.kernel, p.rows, p.cols) == (kernel, rows, cols))


def test_shape_points_match_show(quack, llm):
    for store in (quack, llm):
        points = plot.shape_points(store)
        rows = {(r.kernel, r.shape): r for r in study_rows(store)}
        assert len(points) == len(rows)
        for p in points:
            r = rows[(p.kernel, f"{p.rows}x{p.cols}")]
            assert (p.default_gbps, p.best_gbps, p.speedup) == (r.default_gbps, r.best_gbps, r.speedup)
    p = _point(plot.shape_points(quack), "rmsnorm_fwd", 32768, 4096)
    # README's table: 3649 -> 4051 GB/s, 1.110x, improved.
    assert round(p.default_gbps) == 3649 and round(p.best_gbps) == 4051
    assert p.improved is True and p.speedup_low <= p.speedup <= p.speedup_high
    (ceiling,) = sqlite3.connect("db/quack.sqlite").execute("select ceiling_gbps from it_gpu").fetchone()
    assert 4000 < p.ceiling_gbps == pytest.approx(ceiling)
    last = _point(plot.shape_points(quack), "softmax_fwd", 8192, 262144)
    assert last.improved is True and last.speedup == pytest.approx(1.008, abs=5e-4)  # resumed in a later session


def test_config_choices_decode_verdict_and_inductor_choice(quack, dbs):
    choices = plot.config_choices(quack, kernel="rmsnorm_fwd")
    mine = {c.source: c for c in choices if (c.rows, c.cols) == (32768, 4096)}
    con = sqlite3.connect(dbs["quack"])
    best_json, choice_json = con.execute(
        "select v.best_config_json, t.inductor_choice_json from it_verdict v join it_study s on s.id = v.study_id "
        "join it_trial t on t.study_id = s.id and t.inductor_default = 1 "
        "where s.kernel = 'rmsnorm_fwd' and s.rows = 32768 and s.cols = 4096").fetchone()
    con.close()
    (key, best_cfg), = TrialConfig.from_json(best_json).slots
    assert mine["best"].slot == key and mine["best"].improved is True
    assert (mine["best"].XBLOCK, mine["best"].num_warps, mine["best"].persistent) == (
        best_cfg.XBLOCK, best_cfg.num_warps, best_cfg.persistent)
    (inductor,) = json.loads(choice_json)
    assert mine["default"].persistent is False and mine["default"].R0_BLOCK == inductor["config"]["R0_BLOCK"]
    assert (mine["default"].XBLOCK, mine["default"].num_warps) == (inductor["config"]["XBLOCK"],
                                                                   inductor["config"]["num_warps"])
    # every study with a default trial gets Inductor's choice for its main slot
    assert sum(c.source == "default" for c in plot.config_choices(quack)) == 55


def test_main_slot_prefers_the_row_reduction():
    split = KernelSlot("bw.red.x262144.r8192", True, 262144, 8192, False, False)
    rows = KernelSlot("bw.red.x8192.r262144", True, 8192, 262144, False, False)
    small = KernelSlot("bw.red.x256.r32768", True, 256, 32768, False, False)
    assert plot.main_slot([split, rows, small], 8192, 262144) is rows
    assert plot.main_slot([small, split], 8192, 262144) is split


def test_rows_grouping(quack, llm):
    # llm has M = 8192 and 32768 at the same N; quack varies M only along N.
    assert plot.split_by_rows(plot.shape_points(llm)) and not plot.split_by_rows(plot.shape_points(quack))


def test_plot_bandwidth_series(quack, llm):
    points = plot.shape_points(quack)
    extra = plot.ExtraSeries("distilled (test input)", (1024, 2048), (1.0, 2.0), kind="heuristic")
    ax = plot.plot_bandwidth(_ax(), points, "rmsnorm_fwd", extra=[extra])
    lines = {line.get_label(): line for line in ax.lines}
    mine = sorted((p for p in points if p.kernel == "rmsnorm_fwd"), key=lambda p: p.cols)
    assert list(lines["Inductor default"].get_ydata()) == [p.default_gbps for p in mine]
    assert list(lines["best found"].get_ydata()) == [p.best_gbps for p in mine]
    ceiling = next(line for label, line in lines.items() if label.startswith("copy ceiling NVIDIA H200"))
    assert ceiling.get_ydata()[0] == pytest.approx(mine[0].ceiling_gbps)
    assert lines["distilled (test input)"].get_color() == plot.COLORS["heuristic"]
    assert lines["best found"].get_color() == plot.COLORS["best"] and ax.get_xscale() == "log"
    labels = {line.get_label() for line in plot.plot_bandwidth(_ax(), plot.shape_points(llm), "softmax_fwd").lines}
    assert {"Inductor default (M=8192)", "best found (M=32768)"} <= labels


def test_speedup_heatmap(quack):
    points = plot.shape_points(quack)
    ax = plot.plot_speedup_heatmap(_ax(), points)
    (image,) = ax.images
    grid = image.get_array()
    assert grid.shape == (5, len({p.cols for p in points}))
    assert "5.23\n[5.23-5.24]" in [t.get_text() for t in ax.texts] or any(
        t.get_text().startswith("5.23") for t in ax.texts)
    assert float(grid.max()) == pytest.approx(max(p.speedup for p in points if p.improved))


def test_history_importance_and_grid(quack):
    name = next(p.study for p in plot.shape_points(quack) if (p.kernel, p.cols) == ("softmax_fwd", 4096))
    history = plot.study_history(quack.url, name)
    study = optuna.load_study(study_name=name, storage=quack.url)
    assert len(history.points) == len(study.trials)
    assert history.points[0].inductor_default and history.points[0].gbps
    bests = [p.best_gbps for p in history.points]
    assert all(a <= b for a, b in zip(bests, bests[1:]))
    assert {p.state for p in history.points} <= {"COMPLETE", "FAIL", "PRUNED"}
    assert history.importances and sum(v for _, v in history.importances) == pytest.approx(1.0)
    ax = plot.plot_history(_ax(), history, 4247.0)
    labels = {c.get_label() for c in ax.collections} | {line.get_label() for line in ax.lines}
    assert {"measured trial", "Inductor default (trial 0)", "best so far", "illegal (PRUNED)"} <= labels
    assert len(plot.plot_importances(_ax(), history).patches) == min(len(history.importances), plot.MAX_IMPORTANCES)
    block, cells = plot.warps_block_grid(quack, name, block="XBLOCK")
    measured = [t for t in study.trials if t.state.name == "COMPLETE" and t.params]
    assert block == "XBLOCK" and sum(c.count for c in cells) == len(measured)
    assert all(math.isfinite(c.median_gbps) for c in cells)
    ax = plot.plot_warps_block(_ax(), block, cells)
    assert len(ax.images) == 1 and len(ax.texts) == len(cells)


def test_one_gpu_is_said_plainly(quack):
    comparison = plot.compare_gpus(quack)
    assert comparison.gpus == ("NVIDIA-H200/sm90x132/torch2.11.0+cu130/triton3.6.0",)
    assert "only one GPU" in comparison.message and comparison.rows == ()
    ax = plot.plot_gpu_comparison(_ax(), plot.shape_points(quack), comparison, "rmsnorm_fwd")
    assert not ax.axison and "only one GPU" in ax.texts[0].get_text()


def test_two_gpus_are_compared(tmp_path):
    # Code path only: a second GPU row is written into a scratch copy (no such data is shown anywhere).
    path = tmp_path / "two.sqlite"
    shutil.copy(RECORDED["quack"], path)
    con = sqlite3.connect(path)
    con.execute("insert into it_gpu (id, fingerprint, name, sm_count, compute_capability, memory_bytes, l2_bytes, "
                "cuda_driver, cuda_runtime, torch, triton, ceiling_gbps, created) select 2, 'OTHER/sm0', 'OTHER', "
                "sm_count, compute_capability, memory_bytes, l2_bytes, cuda_driver, cuda_runtime, torch, triton, "
                "ceiling_gbps, created from it_gpu where id = 1")
    con.execute("update it_study set gpu_id = 2 where kernel = 'rmsnorm_fwd' and cols <= 1024")
    con.commit()
    con.close()
    store = plot.open_store(str(path))
    comparison = plot.compare_gpus(store, kernel="rmsnorm_fwd")
    assert len(comparison.gpus) == 2 and len(comparison.rows) == 11
    assert all(len(configs) == 2 and "-" in configs for *_, configs in comparison.rows)
    ax = plot.plot_gpu_comparison(_ax(), plot.shape_points(store), comparison, "rmsnorm_fwd")
    assert len(ax.lines) == 2 and ax.get_xscale() == "log"


def test_report_writes_html_and_pngs(dbs, tmp_path, capsys):
    before = _digest(dbs["quack"])
    out = tmp_path / "rep"
    assert cli.main(["report", dbs["quack"], "--out", str(out)]) == 0
    assert "only one GPU" in capsys.readouterr().out
    pngs = sorted(out.glob("*.png"))
    names = {p.name for p in pngs}
    assert {"bandwidth_bf16.png", "speedup_bf16.png", "configs_softmax_fwd_bf16.png",
            "search_layernorm_bwd_bf16.png"} <= names
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)
    page = (out / "index.html").read_text()
    assert page.count("data:image/png;base64,") == len(pngs)
    assert "NVIDIA-H200/sm90x132/torch2.11.0+cu130/triton3.6.0" in page and "2.11.0+cu130" in page
    assert "rmsnorm_fwd" in page and "only one GPU" in page and "<script" not in page
    assert _digest(dbs["quack"]) == before  # reading studies (Optuna included) writes nothing


@pytest.mark.parametrize("kind", ["empty", "foreign", "no-studies", "other-gpu"])
def test_report_errors_are_one_line(dbs, tmp_path, capsys, kind):
    path = tmp_path / "x.sqlite"
    args = []
    if kind == "empty":
        path.write_bytes(b"")
    elif kind == "foreign":
        con = sqlite3.connect(path)
        con.execute("create table notes (text)")
        con.commit()
        con.close()
    elif kind == "no-studies":
        from inductor_tune.store import Store

        Store(f"sqlite:///{path}")
    else:
        shutil.copy(dbs["quack"], path)
        args = ["--gpu", "H100"]
    assert cli.main(["report", str(path), "--out", str(tmp_path / "out"), *args]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and err[0].startswith("inductor-tune: error: ")
    expected = {"empty": "holds no inductor_tune studies", "foreign": "holds no inductor_tune studies",
                "no-studies": "has no studies", "other-gpu": "matching 'H100'"}[kind]
    assert expected in err[0]
    assert not (tmp_path / "out" / "index.html").exists()


def test_report_on_a_missing_file(tmp_path):
    with pytest.raises(StoreError, match="no database at"):
        report.build(str(tmp_path / "absent.sqlite"), tmp_path / "out")


# -- validation records (`inductor-tune validate`), on a copy of db/validation.sqlite ------------


@pytest.fixture(scope="module")
def validation(tmp_path_factory):
    path = tmp_path_factory.mktemp("val") / "validation.sqlite"
    shutil.copy("db/validation.sqlite", path)
    return str(path)


def _records(path):
    con = sqlite3.connect(path)
    rows = con.execute("select id, heuristics_path, heuristics_digest, kernel, rows, cols, dtype, created, result_json "
                       "from it_validation order by id").fetchall()
    con.close()
    return rows


def test_validation_runs_group_by_file_and_digest(validation):
    runs = plot.validation_runs(validation)
    records = _records(validation)
    expected = {}
    for _, path, digest, kernel, m, n, dtype, *_ in records:
        expected.setdefault((path, digest), []).append((kernel, m, n, dtype))
    assert {(r.heuristics_path, r.digest) for r in runs} == set(expected)
    for r in runs:
        shapes = expected[(r.heuristics_path, r.digest)]
        assert (r.records, r.shapes) == (len(shapes), len(set(shapes)))
        assert r.first <= r.last
    assert [r.last for r in runs] == sorted(r.last for r in runs)
    # Runs that re-measured their shapes: a hold-out file's (two runs) and the random gate's (the same draw
    # scored twice, before and after "touched" meant "a rule applied").
    twice = {r.heuristics_path for r in runs if r.records > r.shapes}
    assert twice == {"heuristics/h200-holdout.yaml", "heuristics/h200.yaml"}, twice


def test_validation_points_take_the_latest_record_per_shape(validation):
    from inductor_tune.validate import DEFAULT

    records = _records(validation)
    latest = {}
    for rid, path, digest, kernel, m, n, dtype, created, text in records:
        if kernel.startswith("model:"):  # whole-model steps: no kernel variants to plot
            continue
        latest[(path, digest, kernel, m, n, dtype)] = (created, json.loads(text))  # ids grow with time
    points = plot.validation_points(validation)
    assert len(points) == sum(len(r["summary"]["variants"]) for _, r in latest.values())
    by_key = {(p.heuristics_path, p.digest, p.kernel, p.rows, p.cols, p.dtype, p.variant): p for p in points}
    for key, (created, result) in latest.items():
        base = statistics.median(result["times"][DEFAULT])
        for v in result["summary"]["variants"]:
            p = by_key[key + (v["name"],)]
            assert str(p.created)[:19] == str(created)[:19]
            # GB/s, % of ceiling and the ratio follow from the stored rounds and bytes (a problem no rule
            # reached was timed as the default alone, its heuristics variant is the default's)
            median = statistics.median(result["times"].get(v["name"], result["times"][DEFAULT]))
            assert p.median_ms == pytest.approx(median)
            assert p.gbps == pytest.approx(result["bytes"] / (median * 1e-3) / 1e9)
            assert p.ratio_to_default == pytest.approx(base / median)
            assert p.ratio_low <= p.ratio_to_default <= p.ratio_high
            assert p.pct_of_ceiling == pytest.approx(100 * p.gbps / p.ceiling_gbps)
            assert 4000 < p.ceiling_gbps < 4300  # the H200 copy ceiling each run measured
    # h200-holdout.yaml was validated twice; the later pass ran without the peer libraries installed
    holdout = plot.validation_points(validation, digest="30bdca3118cec423")
    assert len({(p.kernel, p.rows, p.cols) for p in holdout}) == 40
    assert not {p.variant for p in holdout} & {"quack", "liger"}
    assert all("liger: not importable here" in " ".join(p.notes) for p in holdout)
    assert plot.validation_points(validation, heuristics_path="heuristics/h200.yaml", digest="30bdca3118cec423") == []


def test_validation_rows_feed_validate_render(validation):
    from inductor_tune import validate

    rows = plot.validation_rows(validation, digest="26b57678205cf7d1")
    points = plot.validation_points(validation, digest="26b57678205cf7d1")
    assert len(rows) == len({(p.kernel, p.rows, p.cols) for p in points}) == 58
    row = next(r for r in rows if (r.kernel, r.shape) == ("rmsnorm_fwd", "32768x2048"))
    point = next(p for p in points
                 if (p.kernel, p.rows, p.cols, p.variant) == ("rmsnorm_fwd", 32768, 2048, "heuristics"))
    assert row.variant("heuristics").gbps == point.gbps and row.studied and row.best_peer() is not None
    text = validate.render(rows)
    assert "heuristics vs Inductor default: geomean" in text and "heuristics vs best peer" in text


def test_validation_note_says_when_a_file_was_never_validated(validation):
    runs = plot.validation_runs(validation)
    assert plot.validation_note(runs, "heuristics/h200.yaml", "26b57678205cf7d1").startswith(
        "validated as heuristics/h200.yaml (digest 26b57678205cf7d1): 58 shapes")
    never = plot.validation_note(runs, "heuristics/h200.yaml", "0123456789abcdef")
    assert "has no record of heuristics/h200.yaml with digest 0123456789abcdef" in never
    assert "745059cb3bffd90c" in never and "26b57678205cf7d1" in never  # other versions of the path, not shown
    assert "other versions" not in plot.validation_note(runs, "elsewhere.yaml", "0123456789abcdef")


def test_plot_validation_series(validation):
    points = plot.validation_points(validation, digest="26b57678205cf7d1")
    ax = plot.plot_validation(_ax(), points, "rmsnorm_fwd")
    lines = {line.get_label(): line for line in ax.lines if not line.get_label().startswith("_")}
    assert {"Inductor default", "heuristics (rules installed)", "best found (study's per-shape winner)", "Quack",
            "Liger"} <= set(lines)
    # the line runs through the M=32768 sweep; the other shapes are bare markers labelled MxN
    sweep = sorted((p for p in points if p.kernel == "rmsnorm_fwd" and p.rows == 32768), key=lambda p: p.cols)
    for variant, label in (("inductor_default", "Inductor default"), ("heuristics", "heuristics (rules installed)")):
        line = lines[label]
        assert list(line.get_xdata()) == [p.cols for p in sweep if p.variant == variant]
        assert list(line.get_ydata()) == [p.gbps for p in sweep if p.variant == variant]
        assert line.get_color() == plot.COLORS["default" if variant == "inductor_default" else "heuristic"]
    texts = {t.get_text() for t in ax.texts}
    assert {"49152x1536", "16384x131072", "8192x262144"} <= texts
    ceiling = next(line for label, line in lines.items() if label.startswith("copy ceiling"))
    assert ceiling.get_linestyle() == "--"
    assert ceiling.get_ydata()[0] == pytest.approx(max(p.ceiling_gbps for p in points if p.kernel == "rmsnorm_fwd"))
    assert "4223-4225 GB/s" in ceiling.get_label()  # two sessions of the run, each with its own measured ceiling
    # best found = Inductor's default where the study found no gain: hollow, at the default's GB/s
    kept = next(c for c in ax.collections if c.get_label().startswith("best found = Inductor default"))
    defaults = {p.cols: p.gbps for p in sweep if p.variant == "inductor_default"}
    assert all(y == pytest.approx(defaults.get(x, y)) for x, y in kept.get_offsets().tolist())
    legend = ax.get_legend().get_title().get_text()
    assert "missing data" in legend and "Liger: none at 7 of 16 shapes" in legend and "not importable" in legend
    assert ax.get_xscale() == "log" and "h200.yaml" in ax.get_title()


def test_plot_validation_marks_regressions_and_refuses_mixed_runs(validation):
    holdout = plot.validation_points(validation, digest="30bdca3118cec423")
    ax = plot.plot_validation(_ax(), holdout, "layernorm_bwd")
    ring = next(c for c in ax.collections if c.get_label().startswith("heuristics regressed"))
    assert sorted(x for x, _ in ring.get_offsets().tolist()) == [1536, 2048]
    assert "Quack: none at any shape" in ax.get_legend().get_title().get_text()
    assert "M=16384" in ax.get_title()
    empty = plot.plot_validation(_ax(), holdout, "layernorm_fwd", rows=8192)
    assert not empty.axison and "no validation record" in empty.texts[0].get_text()
    with pytest.raises(ValueError, match="heuristic files"):
        plot.plot_validation(_ax(), plot.validation_points(validation), "rmsnorm_fwd")


def test_validation_figure_png(validation, tmp_path):
    fig = Figure(figsize=(8, 6.4), layout="constrained")
    plot.plot_validation(fig.subplots(), plot.validation_points(validation, digest="26b57678205cf7d1"), "softmax_fwd")
    fig.savefig(tmp_path / "v.png")
    assert (tmp_path / "v.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_second_compile_of_the_default_is_its_own_series_and_no_gap():
    """Since stop 59 `validate` times a second compile of the default where the rules touched a problem
    (db/heldout52.sqlite); it is drawn as such, not as a peer, and the shapes the rules left alone lack it without
    a 'missing data' note."""
    points = plot.validation_points("sqlite:///db/heldout52.sqlite")
    kernel = next(p.kernel for p in points if p.variant == "inductor_default_again")
    ax = plot.plot_validation(_ax(), points, kernel)
    labels = {line.get_label() for line in ax.lines}
    assert "Inductor default, second compile" in labels and "inductor_default_again" not in labels
    legend = ax.get_legend().get_title().get_text()
    assert "second compile" not in legend
