"""Worker processes that step gymnasium envs (or multi-agent worlds) for
:class:`~neuroplug.envs.gymnasium_pool.GymnasiumPool`.

A pool with ``workers = w`` splits its envs into ``w`` runs of consecutive envs (whole
worlds: a world's ``lanes_per_env`` slots stay together); each run lives in one worker
process, which steps all of the run's envs named in a ``send`` and answers with one
message. The processes are started once per (env, worker count) and kept
for the rest of the run: the evaluation engine builds a pool per generation, and starting
a Python process costs far more than a generation of a cheap env. Each pool's envs are
built in the workers when the pool opens and closed when it closes.

Messages to a worker are ``(command, token, *arguments)``, answered in order; ``token``
names the pool, so one worker serves several pools (the pipelined engine's groups). A
worker that fails answers with the error's text, and the pool raises it here. A worker
whose parent dies sees its pipe close and exits.
"""

from __future__ import annotations

import atexit
import itertools
import pickle
import socket
import subprocess
import sys
import traceback
from collections import deque
from multiprocessing.connection import Connection
from typing import Any

import numpy as np

from neuroplug.envs.gymnasium_env import SlotMaker, StepArrays
from neuroplug.runtime.own_processes import count_as_own

_tokens = itertools.count()
_fleets: dict[tuple[bytes, int], list[_Worker]] = {}


def worker_runs(maker: SlotMaker, seeds: list[int], workers: int, **extra: Any) -> list[WorkerRun]:
    """The envs of one pool, one per seed (a world: one per ``maker.lanes_per_env``),
    split into runs of whole envs over ``workers`` processes (at most one per env);
    ``extra``: constructor kwargs for these envs only."""
    lanes = maker.lanes_per_env
    count = min(workers, len(seeds) // lanes)
    fleet = _fleet(maker, count)
    envs = np.array_split(np.arange(len(seeds) // lanes), count)  # none empty: count <= envs
    bounds = [np.arange(run[0] * lanes, (run[-1] + 1) * lanes) for run in envs]
    runs = [
        WorkerRun(worker, int(run[0]), len(run)) for worker, run in zip(fleet, bounds, strict=True)
    ]
    for run, indices in zip(runs, bounds, strict=True):
        run.open([seeds[index] for index in indices], extra)
    for run in runs:
        run.wait_open()
    return runs


def _fleet(maker: SlotMaker, count: int) -> list[_Worker]:
    key = (pickle.dumps(maker), count)
    fleet = _fleets.get(key)
    if fleet is None or not all(worker.alive() for worker in fleet):
        if fleet is not None:
            for worker in fleet:
                worker.stop()
        fleet = [_Worker(maker) for _ in range(count)]
        _fleets[key] = fleet
    return fleet


def stop_all_workers() -> None:
    """Stop every worker process (at exit; the next pool starts new ones)."""
    for fleet in _fleets.values():
        for worker in fleet:
            worker.stop()
    _fleets.clear()


atexit.register(stop_all_workers)


class _Worker:
    """One worker process and our end of its socket.

    Started as ``python -m neuroplug.envs.gymnasium_workers`` rather than through
    ``multiprocessing``: its spawn and forkserver methods re-import the parent's main
    script in the child (running a user's unguarded script again), and fork is unsafe
    beside torch's threads. The child takes this process's ``sys.path`` first, so an
    entry point importable here is importable there."""

    def __init__(self, maker: SlotMaker) -> None:
        ours, theirs = socket.socketpair()
        self.process = subprocess.Popen(
            [sys.executable, "-m", __name__, str(theirs.fileno())],
            pass_fds=(theirs.fileno(),),
            stdin=subprocess.DEVNULL,
        )
        theirs.close()
        # It steps the run's envs while the run acts: its CPU time is the run's own work.
        count_as_own(self.process.pid)
        self.connection = Connection(ours.detach())
        self.connection.send((list(sys.path), maker))
        self._early: dict[int, deque] = {}

    def alive(self) -> bool:
        return self.process.poll() is None

    def request(self, *message: Any) -> None:
        self.connection.send(message)

    def answer(self, token: int) -> Any:
        """The next answer for pool ``token`` (answers for other pools wait their turn)."""
        waiting = self._early.get(token)
        if waiting:
            status, value = waiting.popleft()
        else:
            while True:
                try:
                    status, owner, value = self.connection.recv()
                except EOFError:
                    raise RuntimeError(
                        f"a gymnasium worker process died (exit code {self.process.poll()})"
                    ) from None
                if owner == token:
                    break
                self._early.setdefault(owner, deque()).append((status, value))
        if status == "error":
            raise RuntimeError(f"a gymnasium env failed in its worker process:\n{value}")
        return value

    def stop(self) -> None:
        try:
            self.connection.send(("exit", -1))
        except (BrokenPipeError, OSError):
            pass
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.connection.close()


class WorkerRun:
    """Envs ``first .. first + count - 1`` of a pool, in one worker."""

    def __init__(self, worker: _Worker, first: int, count: int) -> None:
        self.worker = worker
        self.first = first
        self.count = count
        self.token = next(_tokens)
        self._sent: deque[bool] = deque()

    def open(self, seeds: list[int], extra: dict) -> None:
        self.worker.request("open", self.token, seeds, extra)

    def wait_open(self) -> None:
        self.worker.answer(self.token)

    def send_reset(self) -> None:
        self.worker.request("reset", self.token)
        self._sent.append(True)

    def send_step(self, local_ids: np.ndarray, actions: np.ndarray, always: bool = False) -> None:
        """Step this run's envs ``local_ids``; nothing is sent for none, unless ``always``."""
        if len(local_ids) == 0 and not always:
            self._sent.append(False)
            return
        self.worker.request("step", self.token, local_ids, actions)
        self._sent.append(True)

    def expects(self) -> bool:
        """Whether the oldest send in flight sent this run anything."""
        return self._sent.popleft()

    def receive(self) -> StepArrays:
        arrays = self.worker.answer(self.token)
        return arrays._replace(env_ids=arrays.env_ids + np.int32(self.first))

    def render(self, local_ids: np.ndarray) -> np.ndarray:
        self.worker.request("render", self.token, local_ids)
        return self.worker.answer(self.token)

    def close(self) -> None:
        if self.worker.alive():
            self.worker.request("close", self.token)


def _serve(connection: Connection) -> None:
    """A worker's loop: build, step, render and close the envs of the pools it serves."""
    path, maker = _first_message(connection)
    slots: dict[int, Any] = {}
    while True:
        try:
            command, token, *arguments = connection.recv()
        except (EOFError, KeyboardInterrupt):
            break
        if command == "exit":
            break
        try:
            if command == "open":
                seeds, extra = arguments
                slots[token] = maker.slot_set(seeds, **extra)
                answer: Any = None
            elif command == "reset":
                answer = slots[token].reset_all()
            elif command == "step":
                local_ids, actions = arguments
                answer = slots[token].step(local_ids, actions)
            elif command == "render":
                answer = slots[token].render(arguments[0])
            elif command == "close":
                slots.pop(token).close()
                continue
            else:
                raise ValueError(f"unknown command {command!r}")
        except Exception:
            connection.send(("error", token, traceback.format_exc()))
            continue
        connection.send(("ok", token, answer))
    for slot_set in slots.values():
        slot_set.close()


def _first_message(connection: Connection) -> tuple[list[str], SlotMaker]:
    """The parent's ``sys.path``, put in place here (the maker names its env by strings,
    imported only when an env is built), and the maker."""
    path, maker = connection.recv()
    sys.path[:] = path
    return path, maker


if __name__ == "__main__":
    _serve(Connection(int(sys.argv[1])))
