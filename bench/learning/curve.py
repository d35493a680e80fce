"""The run's curve as a PNG, run in the learning venv: ``python -m bench.learning.curve results.json curve.png``.

Left: the SFT loss by step (and its running mean). Middle: RL's updates, the loss by step on each iteration's
rewarded samples, labelled with what the iteration sampled (or, for a run without them, its sampled train reward by
iteration). Right: the held-out pass rate of each arm with its Wilson 95% interval. Imports only matplotlib and the
standard library.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(results_path: Path, target: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = json.loads(results_path.read_text())
    figure, (loss_ax, rl_ax, arms_ax) = plt.subplots(1, 3, figsize=(13, 3.8))
    losses = results["curve"]["sft_loss"]
    steps = [row["step"] for row in losses]
    values = [row["loss"] for row in losses]
    loss_ax.plot(steps, values, ".", alpha=0.35, label="per example")
    window = max(1, len(values) // 20)
    running = [
        sum(values[max(0, i - window + 1) : i + 1]) / len(values[max(0, i - window + 1) : i + 1])
        for i in range(len(values))
    ]
    loss_ax.plot(steps, running, "-", label=f"mean of {window}")
    loss_ax.set(title="warm start: SFT loss", xlabel="step (one example)", ylabel="loss on the model's tokens")
    loss_ax.legend()
    iterations = results["curve"]["rl_iterations"]
    updates = results["curve"].get("rl_loss", [])
    if updates:
        sampled = {it["iteration"]: it for it in iterations}
        first = 1
        for update in updates:
            it = sampled.get(update["iteration"], {})
            label = f"iteration {update['iteration']}: {it.get('rewarded')}/{it.get('sampled')} sampled rewarded"
            rl_ax.plot([first + row["step"] - 1 for row in update["losses"]], [row["loss"] for row in update["losses"]],
                       ".", alpha=0.5, label=label)  # fmt: skip
            first += len(update["losses"])
        rl_ax.set(title="RL: update loss on rewarded samples", xlabel="step (one example)", ylabel="loss")
        rl_ax.legend()
    else:
        rl_ax.plot(
            [0, *[it["iteration"] for it in iterations]], [None, *[it.get("mean_reward") for it in iterations]], "o-"
        )
        rl_ax.set(title="RL: sampled train reward", xlabel="iteration", ylabel="mean reward", ylim=(0, 1.05))
    names = [name for name in ("base", "warm_start", "trained") if results["arms"][name]["n"]]
    rates = [results["arms"][name]["pass_rate"] for name in names]
    errors = [
        [rate - results["arms"][name]["pass_rate_95"][0] for name, rate in zip(names, rates, strict=True)],
        [results["arms"][name]["pass_rate_95"][1] - rate for name, rate in zip(names, rates, strict=True)],
    ]
    arms_ax.bar(names, rates, yerr=errors, capsize=6, color=["#999999", "#6a9fd8", "#2c6db5"][: len(names)])
    counts = [results["arms"][name]["n"] for name in names]
    arms_ax.set(title=f"held-out pass rate ({', '.join(map(str, counts))} episodes)", ylim=(0, 1))
    figure.tight_layout()
    figure.savefig(target, dpi=110)


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
