"""The inspection figures read honestly: configs, colour scales, verdict words, validation and rule pictures.

CPU only, on copies of the committed H200 databases (and heuristics/h200.yaml, read only).  Expected values
are taken from the records themselves (sqlite3 / the stored summaries), never typed in.
"""

import dataclasses
import json
import math
import shutil
import sqlite3
import statistics

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from inductor_tune import heuristics, plot, plot_configs, plot_rules, show, stats  # noqa: E402
from inductor_tune.plot_configs import ADOPTED, KEPT  # noqa: E402


def _ax():
    return Figure(figsize=(6, 4)).subplots()


def _copy(tmp_path_factory, name):
    path = tmp_path_factory.mktemp(name.split(".")[0]) / name
    shutil.copy(f"db/{name}", path)
    return str(path)


@pytest.fixture(scope="module")
def quack(tmp_path_factory):
    return plot.open_store(_copy(tmp_path_factory, "quack.sqlite"))


@pytest.fixture(scope="module")
def validation(tmp_path_factory):
    return _copy(tmp_path_factory, "validation.sqlite")


@pytest.fixture(scope="module")
def gate(tmp_path_factory):
    return _copy(tmp_path_factory, "gate-2033.sqlite")


def _collection(ax, label):
    return next(c for c in ax.collections if c.get_label() == label)


def _xy(collection):
    return sorted(map(tuple, collection.get_offsets().tolist()))


# -- config vs N -------------------------------------------------------------------------------


def test_config_field_draws_adopted_configs_and_the_default_where_it_was_kept(quack):
    choices = plot.config_choices(quack, kernel="softmax_fwd")
    ax = plot.plot_config_field(_ax(), choices, "softmax_fwd", "num_warps", legend=True)
    best = {c.cols: c for c in choices if c.source == "best"}
    default = {c.cols: c for c in choices if c.source == "default"}
    assert _xy(_collection(ax, "Inductor default")) == sorted((n, c.num_warps) for n, c in default.items())
    # filled markers only where the verdict adopted the config
    assert _xy(_collection(ax, ADOPTED)) == sorted((n, c.num_warps) for n, c in best.items() if c.improved)
    # where the default was kept, the ring sits on the default's value, not on the rejected candidate's
    kept = sorted(n for n, c in best.items() if c.improved is False)
    assert kept and _xy(_collection(ax, KEPT)) == sorted((n, default[n].num_warps) for n in kept)
    # the line joins adopted configs only: a gap (NaN) at every shape that kept the default
    (line,) = [ln for ln in ax.lines if ln.get_color() == plot.COLORS["best"]]
    ys = dict(zip(line.get_xdata(), line.get_ydata()))
    assert all(math.isnan(ys[n]) for n in kept)
    assert all(ys[n] == c.num_warps for n, c in best.items() if c.improved)


def test_config_figure_shows_graph_flags_and_split_size(quack):
    """layernorm_bwd 32768x16384, the largest gain recorded, turns mix-order reductions off: its main kernel
    is another one, so only the flags panel (with its speedup) and the split-size panel's gap show it."""
    con = sqlite3.connect(quack.url.split("sqlite:///")[1])
    rows = con.execute("select s.cols, v.best_config_json, v.speedup from it_verdict v join it_study s "
                       "on s.id = v.study_id where s.kernel = 'layernorm_bwd' and v.improved = 1").fetchall()
    con.close()
    off = {n: speedup for n, text, speedup in rows if not json.loads(text)["flags"]["mix_order_reduction"]}
    assert off, "the recorded layernorm_bwd studies have an adopted config with mix-order off"
    choices = plot.config_choices(quack, kernel="layernorm_bwd")
    flags = plot.plot_config_field(_ax(), choices, "layernorm_bwd", "flags")
    adopted = dict(_xy(_collection(flags, ADOPTED)))
    for n in off:
        assert adopted[n] == plot_configs.FLAG_STATES.index("mix-order off")
    assert {t.get_text() for t in flags.texts} >= {f"{s:.2f}x" for s in off.values()}
    assert "mix-order off" in [t.get_text() for t in flags.get_yticklabels()]
    split = plot.plot_config_field(_ax(), choices, "layernorm_bwd", "RSPLIT_SIZE")
    defaults = dict(_xy(_collection(split, "Inductor default")))
    chosen = dict(_xy(_collection(split, ADOPTED)))
    for n in off:
        assert defaults[n] == next(c.RSPLIT_SIZE for c in choices if c.source == "default" and c.cols == n)
        assert n not in chosen  # no mix-order kernel, so no split size: absent, not zero
    assert chosen and all(v >= 16 for v in chosen.values())
    # the one-line description (notebook 02, compare_gpus) names the flag too
    described = {c.cols: plot.describe_choice(c) for c in choices if c.source == "best"}
    assert all(("mix-order off" in text) == (n in off) for n, text in described.items())


def test_config_grid_has_every_field_and_one_legend(quack):
    choices = plot.config_choices(quack, kernel="layernorm_bwd")
    fig = Figure(figsize=(13, 7))
    axes = plot.plot_config_grid(fig, choices, "layernorm_bwd")
    titles = {ax.get_title() for ax in axes.ravel()}
    assert {f"layernorm_bwd: {f}" for f in ("num_warps", "RSPLIT_SIZE", "graph flags")} <= titles
    legends = [ax.get_legend() for ax in axes.ravel() if ax.get_legend() is not None]
    assert len(legends) == 1 and KEPT in [t.get_text() for t in legends[0].get_texts()]


# -- colour scales -----------------------------------------------------------------------------


def test_robust_top_ignores_one_outlier_and_keeps_clusters():
    assert plot.robust_top([1.1, 1.2, 1.3, 1.4, 1.5, 5.2]) == pytest.approx(1.5)
    assert plot.robust_top([1.1, 1.2, 1.3, 1.4, 1.5, 1.6]) == pytest.approx(1.6)
    assert plot.robust_top([1.05, 2.0, 2.1, 2.2]) == pytest.approx(2.2)
    # a cluster of large gains among many small ones is a result, not an outlier: it keeps the top
    many = [1.01, 1.02, 1.04, 1.06, 1.08, 1.1, 1.12, 1.15, 1.24, 1.3, 1.35, 2.0, 2.1, 2.16]
    assert plot.robust_top(many) == pytest.approx(2.16)
    assert plot.robust_top([]) == 2.0


def _point(kernel, cols, speedup, improved=True, verdict="improved"):
    return plot.ShapePoint("gpu", "GPU", f"{kernel}/{cols}", kernel, "bf16", 32768, cols, 1.0, speedup, 4000.0,
                           speedup, speedup, speedup, improved, verdict)


def test_speedup_heatmap_scale_is_not_flattened_by_an_outlier():
    gains = [1.1, 1.2, 1.3, 1.4, 1.5, 5.2]
    points = [_point("rmsnorm_fwd", 256 * 2**i, g) for i, g in enumerate(gains)]
    ax = plot.plot_speedup_heatmap(_ax(), points)
    (image,) = ax.images
    norm = image.norm
    assert norm.vmax < 5.2
    # 1.1x and 1.5x are told apart by colour: half the scale between them, not a few percent
    assert float(norm(1.5)) - float(norm(1.1)) > 0.5
    assert "5.20\n[5.20-5.20]" in [t.get_text() for t in ax.texts]  # the outlier's number is still written
    bar = ax.figure.axes[-1]
    assert bar is not ax and image.colorbar.extend == "max"


def test_speedup_heatmap_on_the_recorded_studies(quack):
    points = plot.shape_points(quack)
    ax = plot.plot_speedup_heatmap(_ax(), points)
    (image,) = ax.images
    gains = sorted(p.speedup for p in points if p.improved)
    # the 5.2x layernorm_bwd shape is past the fence; the ~2x softmax shapes set the top
    assert image.norm.vmax == pytest.approx(gains[-2]) and gains[-1] > 2 * gains[-2]
    texts = [t.get_text() for t in ax.texts]
    slower = [p for p in points if p.verdict == show.SLOWER]
    assert slower and texts.count("= slower") == len(slower)
    assert texts.count("=") == sum(p.improved is False and p.verdict != show.SLOWER for p in points)


# -- verdict words -----------------------------------------------------------------------------


def test_verdicts_say_what_the_rounds_measured(quack):
    con = sqlite3.connect(quack.url.split("sqlite:///")[1])
    records = con.execute("select s.kernel, s.rows || 'x' || s.cols, v.rounds_json, v.improved from it_verdict v "
                          "join it_study s on s.id = v.study_id").fetchall()
    con.close()
    rows = {(r.kernel, r.shape): r for r in show.study_rows(quack)}
    seen = set()
    for kernel, shape, rounds_json, improved in records:
        times = json.loads(rounds_json)
        best = min(times[1:], key=statistics.median)
        outcome = stats.classify(times[0], best)
        verdict = rows[(kernel, shape)].verdict
        if improved:
            assert verdict == show.IMPROVED
        elif outcome == stats.SLOWER:
            assert verdict == show.SLOWER
        elif verdict != show.NOT_CONFIRMED:
            assert "slower in every round" not in verdict and outcome == stats.WITHIN_NOISE
        seen.add(verdict)
    assert {show.IMPROVED, show.SLOWER, show.WITHIN_NOISE} <= seen


def test_not_improved_words():
    slow = json.dumps([[1.0, 1.0, 1.0], [2.0, 2.0, 2.0], [1.5, 1.5, 1.6]])
    assert show.not_improved(slow) == show.SLOWER
    assert show.not_improved(json.dumps([[1.0, 1.0, 1.0], [1.001, 0.999, 1.0]])) == show.WITHIN_NOISE
    # twice as fast at the median, but not in the round where the default itself ran fast
    assert show.not_improved(json.dumps([[1.0, 1.0, 0.6], [0.5, 0.5, 0.6]])) == (
        "no improvement (best candidate faster in 2 of 3 rounds only)")


# -- validation records ------------------------------------------------------------------------


def test_variants_not_measured_are_absent_not_zero(gate, validation):
    """A gate run times the rules only where they change a kernel; a peer missing at a shape leaves a gap."""
    points = plot.validation_points(gate)
    con = sqlite3.connect(gate)
    timed = {(k, m, n) for k, m, n, text in con.execute("select kernel, rows, cols, result_json from it_validation")
             if "heuristics" in json.loads(text)["times"]}
    con.close()
    assert {(p.kernel, p.rows, p.cols) for p in points if p.variant == "heuristics" and p.measured} == timed
    kernel = next(k for k, *_ in sorted(timed))
    ax = plot.plot_validation(_ax(), points, kernel)
    rules = [ln for ln in ax.lines if ln.get_color() == plot.COLORS["heuristic"] and ln.get_marker() == "s"]
    drawn = sorted((float(x), float(y)) for ln in rules for x, y in zip(ln.get_xdata(), ln.get_ydata()))
    expected = sorted((float(p.cols), p.gbps) for p in points if p.kernel == kernel and p.variant == "heuristics"
                      and p.measured)
    assert [x for x, _ in drawn] == [x for x, _ in expected]
    assert [y for _, y in drawn] == pytest.approx([y for _, y in expected])
    assert "heuristics (rules installed): none at" in ax.get_legend().get_title().get_text()
    suite = plot.validation_points(validation, digest="26b57678205cf7d1")
    ax = plot.plot_validation(_ax(), suite, "rmsnorm_fwd")
    quack_line = next(ln for ln in ax.lines if ln.get_label() == "Quack")
    have = {p.cols for p in suite if p.kernel == "rmsnorm_fwd" and p.variant == "quack" and p.rows == 32768}
    for x, y in zip(quack_line.get_xdata(), quack_line.get_ydata()):
        assert (x in have) == (not math.isnan(y)) and y != 0


def test_a_peer_legend_names_the_version_its_records_kept(validation):
    suite = plot.validation_points(validation, digest="26b57678205cf7d1")
    assert not any(p.version for p in suite)  # recorded before versions were kept: the bare name
    labels = [ln.get_label() for ln in plot.plot_validation(_ax(), suite, "rmsnorm_fwd").lines]
    assert "Quack" in labels
    versioned = [dataclasses.replace(p, version="0.6.5") if p.variant == "quack" else p for p in suite]
    labels = [ln.get_label() for ln in plot.plot_validation(_ax(), versioned, "rmsnorm_fwd").lines]
    assert "Quack 0.6.5" in labels and "Quack" not in labels


def test_gate_problems_are_not_joined_by_lines(gate):
    points = plot.validation_points(gate)
    assert all(p.drawn for p in points)
    for kernel in sorted({p.kernel for p in points}):
        ax = plot.plot_validation(_ax(), points, kernel, legend=False)
        assert all(ln.get_linestyle() == "None" for ln in ax.lines if ln.get_marker() in ("o", "s"))


# -- heuristic files ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def h200():
    return heuristics.load("heuristics/h200.yaml")


def test_rule_cells_are_the_file_s_rules(h200):
    cells = plot.rule_cells(h200)
    assert [c.index for c in cells] == list(range(1, len(h200.rules) + 1))
    for cell, rule in zip(cells, h200.rules):
        assert (cell.rnumel, cell.kind, cell.gain) == (tuple(rule.rnumel), rule.kind, rule.evidence.gain_geomean)
        assert (cell.config is None) == (rule.config is None)
        assert all(k in cell.family for k in {s.split()[0] for s in rule.evidence.shapes})
    # within a row, no two rules share a size bucket
    taken = [(c.family, b) for c in cells for b in plot_rules._buckets(c.rnumel)]
    assert len(taken) == len(set(taken))


def test_heuristics_picture_names_keep_default_cells(h200):
    ax = plot.plot_heuristics(_ax(), h200)
    keep = [r for r in h200.rules if r.config is None]
    texts = [t.get_text() for t in ax.texts]
    assert keep and sum(t.startswith(plot_rules.KEEP) for t in texts) == len(keep)
    configs = [t for t in texts if not t.startswith(plot_rules.KEEP)]
    assert len(configs) == len(h200.rules) - len(keep)
    faces = [tuple(p.get_facecolor()) for p in ax.patches]
    grey = matplotlib.colors.to_rgba(plot.COLORS["keep"])
    assert sum(f == grey for f in faces) == len(keep)
    # every config cell says its gain, from the file's evidence
    for rule in h200.rules:
        if rule.config is not None and rule.evidence.gain_geomean:
            assert any(t.endswith(f"{rule.evidence.gain_geomean:.2f}x") for t in configs)


def test_rules_sharing_a_cell_get_rows_of_their_own(h200):
    first = h200.rules[0]
    twin = dataclasses.replace(first, xnumel=(2 * first.xnumel[1], 4 * first.xnumel[1]), config=None)
    heur = dataclasses.replace(h200, rules=(first, twin))
    cells = plot.rule_cells(heur)
    assert cells[0].family != cells[1].family and "x " in cells[1].family


# -- the report --------------------------------------------------------------------------------


def _png_width(path) -> int:
    data = open(path, "rb").read(24)
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return int.from_bytes(data[16:20], "big")


def _digest(path):
    import hashlib

    return hashlib.sha256(open(path, "rb").read()).hexdigest()


@pytest.fixture(scope="module")
def validation_report(validation, tmp_path_factory):
    from inductor_tune import cli

    before = _digest(validation)
    out = tmp_path_factory.mktemp("valreport")
    assert cli.main(["report", validation, "--out", str(out)]) == 0
    assert _digest(validation) == before  # reading validation records writes nothing
    return out


def test_report_draws_a_database_of_validation_records(validation, validation_report):
    con = sqlite3.connect(validation)
    runs = con.execute("select heuristics_path, heuristics_digest, count(distinct kernel) from it_validation "
                       "where kernel not like 'model:%' group by 1, 2").fetchall()
    con.close()
    names = {p.name for p in validation_report.glob("*.png")}
    assert {f"validation_{digest}.png" for _, digest, _ in runs} <= names
    page = (validation_report / "index.html").read_text()
    assert page.count("data:image/png;base64,") == len(names)
    for path, digest, _ in runs:
        assert f"<td>{path}</td><td>{digest}</td>" in page
    # the file a run names is pictured where it still holds that run's rules (h200-holdout.yaml here)
    current = {p: heuristics.load(p).digest() for p in {path for path, *_ in runs}}
    pictured = {f"heuristics_{d}.png" for p, d in current.items() if d in {digest for _, digest, _ in runs}}
    assert pictured and pictured == {n for n in names if n.startswith("heuristics_")}
    assert "<h2>Studies</h2>" not in page and "<h2>Validation records</h2>" in page


def test_report_figures_fit_the_page(validation_report, tmp_path):
    from inductor_tune import cli, report_figures

    shutil.copy("db/llm.sqlite", tmp_path / "llm.sqlite")
    assert cli.main(["report", str(tmp_path / "llm.sqlite"), "--out", str(tmp_path)]) == 0
    # shown at their own size on a page that fits a laptop screen (1440 px), the text keeps its drawn size
    assert report_figures.PAGE_WIDTH_PX <= 1400
    pngs = list(tmp_path.glob("*.png")) + list(validation_report.glob("*.png"))
    assert pngs and all(_png_width(p) <= report_figures.PAGE_WIDTH_PX for p in pngs)
    assert f"max-width: {report_figures.PAGE_WIDTH_PX}px" in (tmp_path / "index.html").read_text()


def test_report_with_a_heuristic_file_draws_its_runs_only(tmp_path, capsys):
    from inductor_tune import cli

    # Held-out set 36 scored h200-s43.yaml's rules under the path hold_back.py wrote them to, h200-s43b.yaml, which
    # holds back nothing; the report finds the records by digest and names the path they were made under.
    scored = "experiments/candidates/h200-s43.yaml"
    digest = heuristics.load(scored).digest()
    shutil.copy("db/heldout36.sqlite", tmp_path / "set36.sqlite")
    assert cli.main(["report", str(tmp_path / "set36.sqlite"), "--heuristics", scored, "--out", str(tmp_path)]) == 0
    assert f"validated as experiments/candidates/h200-s43b.yaml (digest {digest})" in capsys.readouterr().out
    assert {p.name for p in tmp_path.glob("*.png")} == {f"validation_{digest}.png", f"heuristics_{digest}.png"}
    other = tmp_path / "other"
    shutil.copy("db/quack.sqlite", tmp_path / "quack.sqlite")
    assert cli.main(["report", str(tmp_path / "quack.sqlite"), "--heuristics", "heuristics/h200-holdout.yaml",
                     "--out", str(other)]) == 0
    page = (other / "index.html").read_text()
    assert "Heuristic file heuristics/h200-holdout.yaml" in page and "Validation records" not in page


def test_report_of_studies_beside_validation_records(gate, tmp_path):
    """One database with both: the study section and the validation section, each from its own records."""
    from inductor_tune import cli

    path = tmp_path / "both.sqlite"
    shutil.copy("db/quack.sqlite", path)
    con = sqlite3.connect(path)
    con.execute("attach database ? as g", (gate,))
    (gpu_id,) = con.execute("select id from it_gpu").fetchone()
    con.execute("insert into it_validation (gpu_id, heuristics_path, heuristics_digest, kernel, rows, cols, dtype, "
                "regressed, result_json, timing_json, created) select ?, heuristics_path, heuristics_digest, kernel, "
                "rows, cols, dtype, regressed, result_json, timing_json, created from g.it_validation", (gpu_id,))
    con.commit()
    con.close()
    out = tmp_path / "rep"
    assert cli.main(["report", str(path), "--out", str(out)]) == 0
    names = {p.name for p in out.glob("*.png")}
    assert "bandwidth_bf16.png" in names and any(n.startswith("validation_") for n in names)
    page = (out / "index.html").read_text()
    assert "<h2>Studies</h2>" in page and "<h2>Validation records</h2>" in page


def test_report_of_whole_model_records(tmp_path):
    from inductor_tune import cli

    db = tmp_path / "models.sqlite"
    shutil.copy("db/models-h200-span3.sqlite", db)
    assert cli.main(["report", str(db), "--out", str(tmp_path / "rep")]) == 0
    page = (tmp_path / "rep" / "index.html").read_text()
    con = sqlite3.connect(db)
    models = [json.loads(t)["summary"] for (t,) in con.execute("select result_json from it_validation")]
    con.close()
    for m in models:
        assert f"{m['name']}" in page and f"{m['ratio']:.3f}" in page


@pytest.mark.parametrize("text", ["rules: [", "format: inductor-tune-heuristics/0\n"])
def test_a_heuristic_file_that_does_not_parse_leaves_no_report(tmp_path, capsys, text):
    from inductor_tune import cli

    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    shutil.copy("db/gate-2033.sqlite", tmp_path / "gate.sqlite")
    assert cli.main(["report", str(tmp_path / "gate.sqlite"), "--heuristics", str(bad),
                     "--out", str(tmp_path / "rep")]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and err[0].startswith("inductor-tune: error: ")
    assert not (tmp_path / "rep").exists()
