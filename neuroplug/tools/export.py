"""Export a trained policy: ``python -m neuroplug.tools.export <run dir> --format torchscript|onnx``.

Writes ``<run dir>/exported/policy_torchscript.pt`` or ``policy.onnx`` (or ``--out``): the
policy's forward on a batch of raw observations, normalisation inside, env actions out (a
recurrent policy: ``(observations, state) -> (actions, new_state)``), checked against the
policy on the same observations before it is reported (:mod:`neuroplug.deploy.export`).
The exported model runs without neuroplug: ``torch.jit.load`` or ``onnxruntime``. ONNX
needs ``pip install 'neuroplug[export]'``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from neuroplug.errors import NeuroplugError


def main(argv: list[str] | None = None) -> None:
    """Command line of ``python -m neuroplug.tools.export``."""
    from neuroplug.deploy.export import FORMATS

    parser = argparse.ArgumentParser(
        prog="python -m neuroplug.tools.export", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "source", type=Path, help="a run's output dir, a policy file or a shared folder"
    )
    parser.add_argument("--format", required=True, metavar="{" + ",".join(FORMATS) + "}")
    parser.add_argument("--out", type=Path, default=None, help="the file to write")
    parser.add_argument(
        "--which",
        default="policy",
        metavar="{policy,best}",
        help="the deployed policy, or the best member",
    )
    parser.add_argument(
        "--policy",
        default=None,
        help="of a run with a policy per team or agent: the one to export (its name, or an "
        "agent's it plays)",
    )
    arguments = parser.parse_args(argv)
    try:
        exported = export(
            arguments.source, arguments.format, arguments.out, arguments.which, arguments.policy
        )
    except NeuroplugError as error:
        print(f"neuroplug.tools.export: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    print(
        f"exported {exported.format} to {exported.path} (checked against the policy on the "
        f"same observations: largest difference {exported.max_difference:g})"
    )


def export(
    source: Path,
    format: str,
    out: Path | None = None,
    which: str = "policy",
    policy: str | None = None,
):
    """Export ``source``'s policy (:func:`neuroplug.deploy.export.export_policy`; ``policy``
    one of a run's policies per team or agent); the default file is
    ``exported/<format's name>`` beside the policy's run or folder (``exported/<policy>/``
    for one of several)."""
    from neuroplug.deploy.export import FORMATS, ExportError, description, export_policy
    from neuroplug.deploy.loading import deployable, policy_module, read_policy
    from neuroplug.training.policy_file import policy_row
    from neuroplug.training.policy_sources import policy_path

    if format not in FORMATS:
        raise ExportError(f"--format: unknown format {format!r} (allowed: {', '.join(FORMATS)})")
    record = read_policy(source)
    module = policy_module(deployable(record, which, policy=policy)).eval()
    # The policy's own name (an agent names the policy it plays).
    name = record.env["policies"][policy_row(record, policy)] if policy is not None else None
    if out is None:
        home = Path(source) if Path(source).is_dir() else policy_path(source).parent
        out = home / "exported" / (name or "") / FORMATS[format]
    return export_policy(module, out, format, description(module, record, which, name))


if __name__ == "__main__":
    main()
