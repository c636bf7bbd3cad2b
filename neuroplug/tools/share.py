"""Share a trained policy: ``python -m neuroplug.tools.share <run dir> --out <folder>``.

Writes a folder in the Hugging Face Hub's model layout, which ``neuroplug.load_policy``
and ``neuroplug.tools.watch`` read back as they read a run:

- ``README.md``: the model card: its Hub metadata (``library_name: neuroplug``, tags, a
  ``model-index`` entry with the evaluation's ``mean_reward`` as the Hub's RL leaderboards
  read it), the algorithm, the env, the training budget, the evaluation (every episode's
  seed and return), how to load it, and the command that reproduces the run;
- ``policy.pt``: the policy file (``torch.load(..., weights_only=True)`` reads it);
- ``config.yaml``: the run's resolved config;
- ``results.json``: the evaluation's episodes and the run's own last evaluation;
- ``replay.mp4`` (or ``.gif``): the first evaluation episode, as ``watch`` records it;
- ``policy_torchscript.pt`` (and ``policy.onnx`` with ``--formats torchscript onnx``):
  the policy exported, for users without neuroplug.

Uploading is one ``huggingface_hub`` call (docs/deploy.md); nothing here uses the network.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np

from neuroplug.errors import NeuroplugError

CARD = "README.md"


class ShareError(NeuroplugError):
    """A folder that cannot be written (not empty, no policy)."""


def share(
    source: Path,
    out: Path,
    episodes: int | None = None,
    video: bool = True,
    formats: tuple[str, ...] = ("torchscript",),
    which: str = "policy",
) -> Path:
    """Write ``source``'s policy as a shared folder ``out`` (see the module docstring)."""
    from omegaconf import OmegaConf

    import neuroplug
    from neuroplug.deploy.export import FORMATS
    from neuroplug.deploy.loading import chosen_params, read_policy
    from neuroplug.tools.export import export
    from neuroplug.tools.video import default_format
    from neuroplug.tools.watch import watch
    from neuroplug.training.checkpoint import atomic_save
    from neuroplug.training.policy_sources import SHARED_POLICY, policy_path

    source, out = Path(source), Path(out)
    if out.exists() and any(out.iterdir()):
        raise ShareError(f"--out: {out} is not empty; give a new folder")
    record = read_policy(source)
    out.mkdir(parents=True, exist_ok=True)
    if which == "policy":
        shutil.copyfile(policy_path(source), out / SHARED_POLICY)
    else:  # the folder's policy is the one chosen: whoever loads it gets that one
        record.policy_params = chosen_params(record, which)
        atomic_save(record.as_dict(), out / SHARED_POLICY)
    config = OmegaConf.create(record.config)
    (out / "config.yaml").write_text(record.config)
    replay = out / f"replay{default_format()}" if video else None
    watched = watch(out, episodes=episodes, out=replay, video=video)
    exported = [export(out, name, out / FORMATS[name]).path.name for name in formats]
    results = {
        "episodes": len(watched.returns),
        "seeds": [int(seed) for seed in watched.seeds],
        "returns": [float(value) for value in watched.returns],
        "lengths": [int(value) for value in watched.lengths],
        "mean_reward": float(np.mean(watched.returns)),
        "std_reward": float(np.std(watched.returns)),
        "run_eval_return_mean": record.eval_return_mean,
        "neuroplug": neuroplug.__version__,
    }
    (out / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    command = reproduce_command(source, config)
    video_name = watched.video.name if watched.video else None
    (out / CARD).write_text(model_card(config, record, results, command, video_name, exported))
    return out


def reproduce_command(source: Path, config: Any) -> str:
    """``python -m neuroplug`` with the run's own overrides (Hydra's record of its command
    line), else with the settings that name the run."""
    from omegaconf import OmegaConf

    recorded = source / ".hydra" / "overrides.yaml" if source.is_dir() else None
    if recorded is not None and recorded.is_file():
        overrides = [str(item) for item in OmegaConf.load(recorded)]
        overrides = [
            item for item in overrides if not item.startswith(("run.output_dir", "hydra."))
        ]
    else:
        overrides = [
            f"algo={config.algo.name}",
            f"env.task_id={OmegaConf.select(config, 'env.task_id') or config.env.id}",
            f"run.seed={config.run.seed}",
        ]
    return " ".join(["python -m neuroplug", *overrides])


def model_card(
    config: Any,
    record: Any,
    results: dict[str, Any],
    command: str,
    video: str | None,
    exported: list[str],
) -> str:
    """The folder's ``README.md``: Hub metadata, then what the policy is and how to use it."""
    algorithm, task = str(config.algo.name), str(record.env["task_id"])
    family = str(record.env["family"])
    mean, std = results["mean_reward"], results["std_reward"]
    tags = ["neuroplug", "reinforcement-learning", algorithm, task, family]
    front = [
        "---",
        "library_name: neuroplug",
        "tags:",
        *[f"- {tag}" for tag in tags],
        "model-index:",
        f"- name: {algorithm}-{task}",
        "  results:",
        "  - task:",
        "      type: reinforcement-learning",
        "      name: reinforcement-learning",
        "    dataset:",
        f"      name: {task}",
        f"      type: {task}",
        "    metrics:",
        "    - type: mean_reward",
        f"      value: {mean:.2f} +/- {std:.2f}",
        "      name: mean_reward",
        "      verified: false",
        "---",
        "",
    ]
    episodes = "\n".join(
        f"| {index} | {seed} | {value:.2f} | {length} |"
        for index, (seed, value, length) in enumerate(
            zip(results["seeds"], results["returns"], results["lengths"], strict=True)
        )
    )
    trained = f"{record.completed} {record.unit}s"
    last = record.eval_return_mean
    body = f"""# {algorithm} on {task}

A policy trained with neuroplug's `algo={algorithm}`
on `{task}` ({family}) for {trained}; the run's last evaluation:
{f"{last:.2f}" if last is not None else "none"}.
{f"{chr(10)}![replay]({video}){chr(10)}" if video else ""}
## Evaluation

{results["episodes"]} episodes, each from its own seed: mean return **{mean:.2f}** (std
{std:.2f}), by `python -m neuroplug.tools.watch <this folder>`, which plays them again.

| episode | seed | return | steps |
|---|---|---|---|
{episodes}

## Use it

```python
import neuroplug

policy = neuroplug.load_policy("path/to/this/folder")  # a torch.nn.Module
action = policy(observation)  # raw observation in (normalised inside), env action out
```

Without neuroplug: {", ".join(f"`{name}`" for name in exported) or "(not exported)"}
(`torch.jit.load`, or `onnxruntime` for ONNX). `config.yaml` is the run's config,
`results.json` the evaluation's numbers.

## Reproduce

```bash
{command}
```
"""
    return "\n".join(front) + body


def main(argv: list[str] | None = None) -> None:
    """Command line of ``python -m neuroplug.tools.share``."""
    parser = argparse.ArgumentParser(
        prog="python -m neuroplug.tools.share", description=__doc__.splitlines()[0]
    )
    parser.add_argument("source", type=Path, help="a neuroplug run's output dir (or a policy file)")
    parser.add_argument(
        "--out", type=Path, required=True, help="the folder to write (new or empty)"
    )
    parser.add_argument(
        "--episodes",
        type=int,
        default=None,
        help="evaluation episodes (default: run.eval_episodes)",
    )
    parser.add_argument("--no-video", action="store_true", help="no replay video")
    parser.add_argument(
        "--formats",
        nargs="*",
        default=["torchscript"],
        help="exports to include: torchscript, onnx (needs neuroplug[export]); none: no export",
    )
    parser.add_argument("--which", default="policy", metavar="{policy,best}")
    arguments = parser.parse_args(argv)
    formats = tuple(name for name in arguments.formats if name != "none")
    try:
        out = share(
            arguments.source,
            arguments.out,
            arguments.episodes,
            not arguments.no_video,
            formats,
            arguments.which,
        )
    except NeuroplugError as error:
        print(f"neuroplug.tools.share: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    print(f"shared folder: {out} (upload: see docs/deploy.md)")


if __name__ == "__main__":
    main()
