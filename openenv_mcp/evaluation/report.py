"""An evaluation as one self-contained HTML page: the figures, three plots drawn as inline SVG, the tasks.

The page loads nothing from anywhere (no script, no style sheet, no font): it can be mailed, archived
or opened offline and shows the same.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from html import escape
from typing import Any

from openenv_mcp.evaluation.metrics import TaskScore
from openenv_mcp.evaluation.run import Evaluation

__all__ = ["render_html"]

_WIDTH, _HEIGHT, _PAD = 520, 240, 40
_BLUE, _ORANGE, _GREY = "#2f6db5", "#d9822b", "#c8ced6"
_MAX_BARS = 60  # more tasks than this: the success-rate plot has one bar per difficulty tier instead


def render_html(evaluation: Evaluation) -> str:
    """The report page of ``evaluation``."""
    run, k = evaluation.run, evaluation.k
    title = f"openenv-mcp eval: {run.get('server', '?')}, split {run.get('split', '?')}, {k} trials per task"
    unscored = evaluation.tasks - len(evaluation.scores)
    facts = [
        ("tasks", f"{evaluation.tasks}" + (f" ({unscored} without a finished trial)" if unscored else "")),
        ("trials", f"{len(evaluation.ok)} scored"),
        ("infra failures", f"{len(evaluation.infra)} (left out of the figures; a resumed eval plays them again)"),
        ("mean reward", f"{evaluation.mean_reward:.3f}"),
        (f"pass@{k}", f"{evaluation.overall('pass_at', k):.3f}"),
        (f"pass^{k}", f"{evaluation.overall('pass_hat', k):.3f}"),
        ("ended", ", ".join(f"{reason} {count}" for reason, count in evaluation.end_reasons.items())),
        ("policy", str(run.get("policy", "?"))),
        *[(label, _setting(key, run[key])) for key, label in _MODEL_FACTS if key in run],
        ("seed", str(run.get("seed", "?"))),
        ("time", _times(evaluation.totals())),
    ]
    tiers = evaluation.tiers()
    difficulty = evaluation.difficulties
    rows = "".join(
        f"<tr><td>{escape(s.task_id)}</td><td>{escape(difficulty.get(s.task_id) or '-')}</td><td>{s.trials}</td>"
        f"<td>{s.successes}</td><td>{s.mean_reward:.3f}</td>"
        f"<td>{_maybe(s.pass_at, k, s.trials)}</td><td>{_maybe(s.pass_hat, k, s.trials)}</td></tr>"
        for s in evaluation.scores
    )
    per_tier = _tier_table(evaluation, tiers)
    if len(evaluation.scores) <= _MAX_BARS or not tiers:
        bars_title, bars = "Success rate per task", [(s.task_id, _success(s)) for s in evaluation.scores]
    else:  # hundreds of tasks: one bar per tier (the table below has every task)
        bars_title = "Success rate per difficulty"
        bars = [(tier, sum(_success(s) for s in scores) / len(scores)) for tier, scores in tiers.items()]
    errors = "".join(
        f"<li>{escape(t.task_id)} trial {t.index} ({escape(t.end_reason)}"
        f"{', infrastructure' if t.infra else ''}): {escape(t.error or '')}</li>"
        for t in evaluation.errors
    )
    ks = list(range(1, k + 1))
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>
<style>
body {{ font-family: sans-serif; margin: 2em; color: #222; }}
table {{ border-collapse: collapse; margin: 1em 0; }}
td, th {{ border: 1px solid #ddd; padding: 4px 10px; text-align: right; }}
td:first-child, th:first-child {{ text-align: left; }}
figure {{ display: inline-block; margin: 0 2em 2em 0; }}
figcaption {{ font-weight: bold; margin-bottom: .5em; }}
</style></head><body>
<h1>{escape(title)}</h1>
<table>{"".join(f"<tr><th>{escape(a)}</th><td>{escape(b)}</td></tr>" for a, b in facts)}</table>
{per_tier}
<figure><figcaption>Reward distribution (trials)</figcaption>{_histogram([t.reward for t in evaluation.ok])}</figure>
<figure><figcaption>{bars_title}</figcaption>{_bars(bars)}</figure>
<figure><figcaption>pass@k and pass^k against k</figcaption>{
        _lines(
            ks,
            [
                ("pass@k", _BLUE, [evaluation.overall("pass_at", i) for i in ks]),
                ("pass^k", _ORANGE, [evaluation.overall("pass_hat", i) for i in ks]),
            ],
        )
    }</figure>
<h2>Tasks</h2>
<table><tr><th>task</th><th>difficulty</th><th>trials</th><th>successes</th><th>mean reward</th><th>pass@{
        k
    }</th><th>pass^{k}</th></tr>
{rows}</table>
{f"<h2>Failed trials</h2><ul>{errors}</ul>" if errors else ""}
</body></html>
"""


_MODEL_FACTS = (
    ("model", "model"),
    ("base_url", "endpoint"),
    ("temperature", "temperature"),
    ("max_tokens", "max tokens"),
    ("max_turns", "turn cap"),
    ("tool_choice", "tool choice"),
    ("tool_parser", "tool parser"),
    ("reminders", "reminders"),
)


def _setting(key: str, value: object) -> str:
    if value is None:
        return "the step limit" if key == "max_turns" else "the endpoint's default"
    return str(value)


def _times(totals: dict[str, Any]) -> str:
    seconds = totals["seconds"]
    text = f"{seconds['wall']:.1f} s wall: environment {seconds['environment']:.1f} s, model {seconds['model']:.1f} s"
    model = totals.get("model")
    if model:
        text += (
            f"; {model['turns']} model turns, {model['text_replies']} without a call, "
            f"{model['parsed_calls']} calls read from the text, {model['refused_calls']} refused"
        )
    return text


def _success(score: TaskScore) -> float:
    return score.successes / score.trials if score.trials else 0.0


def _tier_table(evaluation: Evaluation, tiers: dict[str, list[TaskScore]]) -> str:
    """Pass rates per difficulty tier (nothing when no task has a difficulty)."""
    if not tiers:
        return ""
    k = str(evaluation.k)
    rows = []
    for tier, scores in tiers.items():
        f = evaluation.figures(scores)
        rows.append(
            f"<tr><td>{escape(tier)}</td><td>{f['tasks']}</td><td>{f['trials']}</td><td>{f['mean_reward']:.3f}</td>"
            f"<td>{f['pass@k'][k]:.3f}</td><td>{f['pass^k'][k]:.3f}</td></tr>"
        )
    return (
        f"<h2>Per difficulty</h2><table><tr><th>difficulty</th><th>tasks</th><th>trials</th><th>mean reward</th>"
        f"<th>pass@{k}</th><th>pass^{k}</th></tr>{''.join(rows)}</table>"
    )


def _maybe(measure: Callable[[int], float], k: int, trials: int) -> str:
    return f"{measure(k):.3f}" if trials >= k else "-"


def _svg(body: str, height: int = _HEIGHT) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_WIDTH}" height="{height}" '
        f'viewBox="0 0 {_WIDTH} {height}" font-size="11" font-family="sans-serif">{body}</svg>'
    )


def _histogram(rewards: Sequence[float], bins: int = 10) -> str:
    counts = [0] * bins
    for reward in rewards:
        counts[min(bins - 1, max(0, int(reward * bins)))] += 1
    top = max(counts) or 1
    plot_w, plot_h = _WIDTH - 2 * _PAD, _HEIGHT - 2 * _PAD
    width = plot_w / bins
    parts = [f'<line x1="{_PAD}" y1="{_PAD + plot_h}" x2="{_PAD + plot_w}" y2="{_PAD + plot_h}" stroke="#444"/>']
    for i, count in enumerate(counts):
        h = plot_h * count / top
        x = _PAD + i * width
        parts.append(
            f'<rect x="{x + 1:.1f}" y="{_PAD + plot_h - h:.1f}" width="{width - 2:.1f}" height="{h:.1f}" '
            f'fill="{_BLUE}"><title>{i / bins:.1f}-{(i + 1) / bins:.1f}: {count}</title></rect>'
        )
        if count:
            parts.append(
                f'<text x="{x + width / 2:.1f}" y="{_PAD + plot_h - h - 3:.1f}" text-anchor="middle">{count}</text>'
            )
    for i in range(0, bins + 1, 2):
        parts.append(
            f'<text x="{_PAD + i * width:.1f}" y="{_PAD + plot_h + 14}" text-anchor="middle">{i / bins:.1f}</text>'
        )
    parts.append(f'<text x="{_WIDTH / 2}" y="{_HEIGHT - 6}" text-anchor="middle">reward</text>')
    return _svg("".join(parts))


def _bars(values: Sequence[tuple[str, float]]) -> str:
    row = 16
    height = max(_HEIGHT, 2 * _PAD + row * len(values))
    label_w = 130
    plot_w = _WIDTH - label_w - _PAD
    parts = []
    for i, (name, value) in enumerate(values):
        y = _PAD / 2 + i * row
        parts.append(f'<text x="{label_w - 6}" y="{y + 11}" text-anchor="end">{escape(name[:22])}</text>')
        parts.append(f'<rect x="{label_w}" y="{y + 2}" width="{plot_w:.1f}" height="{row - 4}" fill="{_GREY}"/>')
        parts.append(
            f'<rect x="{label_w}" y="{y + 2}" width="{plot_w * value:.1f}" height="{row - 4}" fill="{_BLUE}">'
            f"<title>{escape(name)}: {value:.0%}</title></rect>"
        )
        parts.append(f'<text x="{label_w + plot_w + 4}" y="{y + 11}">{value:.0%}</text>')
    return _svg("".join(parts), height)


def _lines(ks: Sequence[int], series: Sequence[tuple[str, str, Sequence[float]]]) -> str:
    plot_w, plot_h = _WIDTH - 2 * _PAD, _HEIGHT - 2 * _PAD
    step = plot_w / max(1, len(ks) - 1)

    def point(i: int, value: float) -> tuple[float, float]:
        return _PAD + i * step, _PAD + plot_h * (1 - value)

    parts = [
        f'<line x1="{_PAD}" y1="{_PAD + plot_h}" x2="{_PAD + plot_w}" y2="{_PAD + plot_h}" stroke="#444"/>',
        f'<line x1="{_PAD}" y1="{_PAD}" x2="{_PAD}" y2="{_PAD + plot_h}" stroke="#444"/>',
    ]
    for tick in (0.0, 0.5, 1.0):
        parts.append(
            f'<text x="{_PAD - 4}" y="{_PAD + plot_h * (1 - tick) + 4:.1f}" text-anchor="end">{tick:.1f}</text>'
        )
    for i, k in enumerate(ks):
        parts.append(f'<text x="{_PAD + i * step:.1f}" y="{_PAD + plot_h + 14}" text-anchor="middle">{k}</text>')
    for n, (name, colour, values) in enumerate(series):
        points = " ".join(f"{x:.1f},{y:.1f}" for x, y in (point(i, v) for i, v in enumerate(values)))
        parts.append(f'<polyline points="{points}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for i, value in enumerate(values):
            x, y = point(i, value)
            parts.append(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}">'
                f"<title>{name} k={ks[i]}: {value:.3f}</title></circle>"
            )
        parts.append(f'<text x="{_WIDTH - _PAD - 60}" y="{_PAD + 14 * n}" fill="{colour}">{escape(name)}</text>')
    parts.append(f'<text x="{_WIDTH / 2}" y="{_HEIGHT - 6}" text-anchor="middle">k</text>')
    return _svg("".join(parts))
