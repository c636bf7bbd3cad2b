"""Command line: ``python -m neuroplug [--list-plugins] [hydra overrides...]``."""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import sys
import threading
from collections.abc import Iterator


def list_plugins() -> int:
    """Print every discovered plugin, and the config options packages add; reads metadata
    only."""
    from neuroplug import registry
    from neuroplug.config.packages import package_options
    from neuroplug.discovery import singular
    from neuroplug.errors import PluginError

    rows = [("kind", "name", "distribution", "version", "target")]
    names: dict[tuple[str, str], int] = {}
    for info in registry.describe_all():
        rows.append((singular(info.kind), info.name, info.distribution, info.version, info.target))
        names[(info.kind, info.name)] = names.get((info.kind, info.name), 0) + 1
    try:
        for option in package_options():
            rows.append(
                (
                    "config_option",
                    f"{option.group}={option.name}",
                    option.distribution,
                    option.version,
                    str(option.path),
                )
            )
    except PluginError as error:
        print(f"warning: {error}")
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    for row in rows:
        print(
            "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        )
    for (kind, name), count in names.items():
        if count > 1:
            print(
                f"warning: {singular(kind)} {name!r} is claimed by {count} distributions; selecting it will fail"
            )
    return 0


def _unknown_group_option(argv: list[str]):
    """The error for a ``group=option`` naming no option (``algo=ess``), found from the
    shipped yamls and the plugins' entry-point metadata alone: before Hydra, torch or any
    plugin is imported, so a typo costs a fraction of a second. None when all are known (a
    value Hydra resolves itself, ``glob(...)`` say, is left to Hydra)."""
    from neuroplug import registry
    from neuroplug.config.packages import package_options
    from neuroplug.config.paths import conf_dir
    from neuroplug.config.unknown_option import unknown_group_option
    from neuroplug.errors import PluginError

    options = {
        path.name: {yaml.stem for yaml in path.glob("*.yaml")}
        for path in conf_dir().iterdir()
        if path.is_dir() and path.name != "schema"
    }
    for kind in registry.KINDS.values():
        options.setdefault(kind.config_group, set()).update(registry.discover(kind.name))
    try:
        for option in package_options():
            options.setdefault(option.group, set()).add(option.name)
    except PluginError:
        return None  # Hydra's composition reports it, naming the distributions
    for argument in argv:
        key, equals, value = argument.partition("=")
        group = key.lstrip("+~")
        if not equals or group not in options or key.startswith("~") or "(" in value:
            continue
        for name in value.split(","):  # a sweep: algo=ga,es
            if name and name not in options[group] and "$" not in name:
                return unknown_group_option(group, name, sorted(options[group]))
    return None


_NO_RUN_FLAGS = ("--help", "-h", "--cfg", "-c", "--info", "-i", "--resolve", "--shell-completion")


def _will_log_to_wandb(argv: list[str]) -> bool:
    """Whether this command most likely trains with the W&B logger (the default): then its
    sidecar starts before torch is imported (a wrong guess costs an idle process)."""
    if any(flag in argv for flag in _NO_RUN_FLAGS):
        return False
    loggers = [arg.split("=", 1)[1] for arg in argv if arg.startswith("logger=")]
    return not loggers or any(name in ("wandb", "all") for name in loggers[-1].split(","))


def main(argv: list[str] | None = None) -> None:
    """The command line, callable in a Python process (``python -m neuroplug`` and the
    ``neuroplug`` script run it through :func:`run`)."""
    argv = sys.argv[1:] if argv is None else argv
    if "--list-plugins" in argv:
        raise SystemExit(list_plugins())
    unknown = _unknown_group_option(argv)
    if unknown is not None:
        print(f"neuroplug: error: {unknown}", file=sys.stderr)
        raise SystemExit(2)
    if _will_log_to_wandb(argv):
        from neuroplug.loggers.wandb_logger import prewarm

        prewarm()
    import hydra

    from neuroplug.app import hydra_entry
    from neuroplug.config.paths import conf_dir
    from neuroplug.experiment.hydra_store import register_resolvers, register_schemas

    register_resolvers()
    register_schemas()
    argv = [_whole_numbers(argument) for argument in argv]
    if ("--help" in argv or "-h" in argv) and not {"-m", "--multirun", "--hydra-help"} & set(argv):
        with _errors_reported_as_neuroplug(multirun=False, argv=argv):
            print(_help_text(argv))
        return
    sys.argv = [sys.argv[0], *argv]
    multirun = "-m" in argv or "--multirun" in argv
    _claim_run_dirs(argv, multirun)
    with _errors_reported_as_neuroplug(multirun, argv):
        hydra.main(version_base="1.3", config_path=str(conf_dir()), config_name="config")(
            hydra_entry
        )()


def _help_text(argv: list[str]) -> str:
    """``--help``: the help template of ``conf/config.yaml`` with the config these overrides
    compose. Hydra's own ``--help`` prints the same page but first walks every config group
    a few hundred times, which took most of a second here."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf, open_dict

    from neuroplug.config.paths import conf_dir

    flags = {"--help", "-h", "--resolve"}
    overrides = [argument for argument in argv if argument not in flags]
    with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
        config = compose("config", overrides=overrides, return_hydra_config=True)
    template = config.hydra.help.template
    with open_dict(config):  # the composed config is struct
        del config["hydra"]
    shown = OmegaConf.to_yaml(config, resolve="--resolve" in argv)
    return template.replace("$CONFIG", shown)


_SCIENTIFIC = re.compile(r"[+-]?\d+(\.\d+)?[eE]\+?\d+")


def _whole_numbers(argument: str) -> str:
    """``run.max_frames=1e6`` as ``run.max_frames=1000000``: a whole number in scientific
    notation is an integer (YAML reads it as a float, which an integer setting refuses).
    Sweep lists (``=1e6,2e6``) are rewritten item by item; anything else is left alone."""
    key, equals, value = argument.partition("=")
    if not equals or key.startswith(("-", "hydra.")):
        return argument
    items = value.split(",")
    if not all(_SCIENTIFIC.fullmatch(item) for item in items):
        return argument
    numbers = [float(item) for item in items]
    if not all(number.is_integer() and abs(number) < 2**53 for number in numbers):
        return argument
    return f"{key}={','.join(str(int(number)) for number in numbers)}"


def _claim_run_dirs(argv: list[str], multirun: bool) -> None:
    """Start this command's run-dir bookkeeping: a dir named on the command line is created
    here, before Hydra creates it, so that this run knows the dir is its own (and may remove
    it if the run is refused) or another run's (and never touches it)."""
    from neuroplug.config import run_dir

    run_dir.forget_claims()
    if any(flag in argv for flag in _NO_RUN_FLAGS):
        run_dir.stop_claiming()
        return
    if multirun:  # the sweep dir is claimed when Hydra resolves it; jobs get subdirs of it
        return
    for argument in argv:
        key, _, value = argument.partition("=")
        named = key.lstrip("+~") in ("hydra.run.dir", "run.output_dir")
        if named and value not in ("", "null") and "${" not in value:
            run_dir.claim_named_dir(value)


@contextlib.contextmanager
def _errors_reported_as_neuroplug(multirun: bool, argv: list[str]) -> Iterator[None]:
    """What Hydra would print for a failure before neuroplug's code runs, neuroplug says
    in its own one line where it can: a value of the wrong type, a run dir that cannot be
    written. Hydra hands the exception over only with ``HYDRA_FULL_ERROR=1`` (set here for
    the call); a user who set it gets Hydra's full traceback as before."""
    user_wants_traceback = os.environ.get("HYDRA_FULL_ERROR")
    os.environ["HYDRA_FULL_ERROR"] = "1"
    try:
        yield
    except Exception as error:
        from neuroplug.config.run_dir import remove_unused_dirs

        remove_unused_dirs()  # e.g. a dir named on the command line, for a config that failed
        if user_wants_traceback == "1":
            raise
        raise SystemExit(_report(error, multirun, argv)) from None
    finally:
        if user_wants_traceback is None:
            os.environ.pop("HYDRA_FULL_ERROR", None)
        else:
            os.environ["HYDRA_FULL_ERROR"] = user_wants_traceback


def _report(error: Exception, multirun: bool, argv: list[str]) -> int:
    """Print ``error`` (raised for the command line ``argv``) for the user; returns the
    exit status."""
    from hydra.errors import CompactHydraException
    from omegaconf.errors import OmegaConfBaseException

    from neuroplug.app import raised_in_a_job, reported
    from neuroplug.config.override_syntax import override_syntax_error
    from neuroplug.config.unknown_option import unknown_option_error
    from neuroplug.config.wrong_type import wrong_type_error
    from neuroplug.errors import ConfigError

    if reported(error):  # a sweep job's error, already printed by the job
        print("neuroplug: a sweep job failed (its error is above)", file=sys.stderr)
        return 1
    from neuroplug.registry import plugins_with_setting

    message = (
        wrong_type_error(error)
        or unknown_option_error(error, plugins_with_setting)
        or override_syntax_error(error, argv)
    )
    if (
        message is None
        and isinstance(error, OSError)
        and not isinstance(error, CompactHydraException)  # Hydra's missing config is an OSError
        and not raised_in_a_job(error)
    ):
        # Hydra creates the run dir and writes its .hydra/ record before neuroplug runs.
        field = "hydra.sweep.dir" if multirun else "run.output_dir"
        message = ConfigError(
            field,
            f"cannot write the run dir {error.filename or ''} ({error.strerror or error})",
            "a directory you can create and write; the default is "
            "outputs/<date>/<time>_<algo>_<env> below the current directory",
        )
    if message is not None:
        print(f"neuroplug: error: {message}", file=sys.stderr)
        return 2
    if isinstance(error, CompactHydraException):  # Hydra's own short messages, as Hydra prints them
        print(error, file=sys.stderr)
        if isinstance(error.__cause__, OmegaConfBaseException):
            print(error.__cause__, file=sys.stderr)
        return 1
    import traceback

    traceback.print_exception(error)
    return 1


def run() -> None:
    """The program: :func:`main`, then a fast exit (``python -m neuroplug`` and the
    ``neuroplug`` script; callers in a Python process use :func:`main`)."""
    try:
        main()
    except SystemExit as stop:
        _exit_now(stop.code)
        raise
    _exit_now(0)


def _exit_now(code: int | str | None) -> None:
    """Leave without the interpreter's teardown, which spends a noticeable time destroying torch's and
    EnvPool's module state on a 2-core machine after the run is over. Exit handlers still
    run and the standard streams are flushed; with a non-daemon thread still running (a
    launcher's, say) the normal exit waits for it instead."""
    others = [
        thread
        for thread in threading.enumerate()
        if thread is not threading.main_thread() and not thread.daemon and thread.is_alive()
    ]
    if others:
        return
    if isinstance(code, str):
        print(code, file=sys.stderr)
        code = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # closed or gone (a pipe's reader left)
            pass
    os._exit(code or 0)
