"""Device settings (``backend.device``, ``algo.device``) as torch devices, checked against
what this machine has, and the CPU thread counts a run uses (one rule for every family).

Threads: EnvPool gets one worker per available core unless ``scheduler.env_threads`` says
otherwise. PyTorch's CPU threads (``backend.torch_threads``, ``algo.torch_threads``) at 0
("auto") follow the machine's load, checked before every generation or segment
(:class:`TorchThreads`): one per core while nothing else wants the cores, 1 while other
processes do. A fixed thread count is fast only in one of those worlds: on an idle machine
more threads beat one on Atari networks, and beside CPU-bound processes they fall far
behind one, since every operation ends in a barrier that waits for all its threads and
each wait is a time slice another process holds (``benchmarks/results/threads.md``
measures every setting, quiet and loaded). The
population forwards give the same bits at 1 and 2 threads
(``tests/runtime/test_devices.py``), so switching does not change an evolution run's results.

Float32 products: every process of a run sets PyTorch's matmul precision to
``run.matmul_precision`` (:func:`set_matmul_precision`). What ``medium`` does on a CPU is
oneDNN's choice and differs by CPU (bfloat16-rounded inputs on some, another float32 kernel
on others): the start-up line says what it measured here (:func:`measure_medium_precision`,
figures in ``benchmarks/results/matmul_precision.md``).

Denormals: every process of a run flushes floats below 1.2e-38 to zero
(:func:`flush_denormals`). Adam's second moments of parameters whose gradient stays zero (a
dead ReLU's weights) decay through that range for thousands of steps, and x86 CPUs take
about a hundred cycles per denormal operand: a DQN's fused Adam step on CartPole took
several times as long (``benchmarks/results/design_measurements.md``).
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import torch

from neuroplug.errors import ConfigError
from neuroplug.runtime.own_processes import own_cpu_seconds


def resolve_device(name: str, field: str = "backend.device") -> torch.device:
    """``auto`` becomes CUDA when available, else CPU; others are checked (errors name
    ``field``)."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except RuntimeError as error:
        raise ConfigError(field, f"{name!r} is not a device", "auto, cpu, cuda, cuda:N") from error
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ConfigError(field, "CUDA was requested but no GPU is visible", "auto or cpu")
    return device


def has_native_bfloat16(device: torch.device) -> bool:
    """Whether ``device`` computes in bfloat16 natively: a GPU that supports it, or a CPU
    with AVX512-BF16 or AMX. Elsewhere PyTorch emulates it, slower than float32."""
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    if device.type != "cpu":
        return False
    return bool(torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported())


def on_cpu(state: Any) -> Any:
    """``state`` (nested dicts, lists and tuples) with every tensor copied to the CPU: a
    checkpoint loads on any device, and two states compare wherever they were made."""
    if isinstance(state, torch.Tensor):
        return state.detach().cpu().clone()
    if isinstance(state, dict):
        return {key: on_cpu(value) for key, value in state.items()}
    if isinstance(state, list | tuple):
        return type(state)(on_cpu(value) for value in state)
    return state


def available_cores() -> int:
    """The cores this process may run on (its affinity mask: ``taskset``, cgroups, SLURM)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return os.cpu_count() or 1


def _cpu_ids() -> set[int] | None:
    try:
        return set(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - macOS, Windows
        return None


def _busy_cpu_seconds(cpus: set[int] | None) -> float | None:
    """CPU seconds the given cores (all, when None) have spent busy since boot, from
    ``/proc/stat``; None where it cannot be read."""
    try:
        with open("/proc/stat") as stream:
            lines = stream.read().splitlines()
        ticks = os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError):
        return None
    busy = 0
    for line in lines:
        name, *fields = line.split()
        if not name.startswith("cpu") or name == "cpu":
            continue
        if cpus is not None and int(name[3:]) not in cpus:
            continue
        user, nice, system, idle, iowait, irq, softirq, steal = (int(v) for v in fields[:8])
        busy += user + nice + system + irq + softirq + steal
    return busy / ticks


def available_memory_bytes() -> int | None:
    """Memory the machine can give a new allocation now (``MemAvailable``), or None where
    the system does not say."""
    try:
        with open("/proc/meminfo") as stream:
            for line in stream:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def whole_count(number: int) -> str:
    """``1,024``, or ``3.4e+38`` where digits would fill the line (a grid archive over many
    dimensions; beyond what a float holds too)."""
    if number < 10**12:
        return f"{number:,}"
    digits = str(number)
    return f"{digits[0]}.{digits[1]}e+{len(digits) - 1}"


def gib(size: int) -> str:
    """``size`` bytes in GiB: ``2.4``, or ``2.9e+190`` past what a float shows plainly."""
    return f"{size / 2**30:.1f}" if size < 2**40 else whole_count(size // 2**30)


def refuse_unless_it_fits(
    field: str,
    needed: int,
    what: str,
    allowed: Callable[[int], str],
    share: float = 0.8,
    available: int | None = None,
) -> None:
    """The one memory check (a replay buffer, a QD archive, a population of learners):
    refuse in one line, before anything is built, ``needed`` bytes that would take more than
    ``share`` of the memory available now. ``what`` says what needs them (``1,000,000
    transitions of Hopper-v4``); ``allowed(bytes)`` what fits in that share instead, the
    error's "allowed" part. ``available`` defaults to :func:`available_memory_bytes`; where
    the system does not say, nothing is refused."""
    available = available_memory_bytes() if available is None else available
    if available is None or needed <= share * available:
        return
    raise ConfigError(
        field,
        f"{what} need {gib(needed)} GiB; {gib(available)} GiB is available",
        allowed(int(share * available)),
    )


def flush_denormals() -> None:
    """Flush denormal floats to zero in this process's CPU arithmetic (PyTorch's threads
    included): a value below 1.2e-38 in a network, a gradient or an optimizer's state is
    zero to every result a run reports, and computing with it costs x86 CPUs about 100
    cycles an operand. Every process that computes a run's numbers calls it (the run's own,
    Ray's evaluators and samplers), so they all give the same bits. A no-op where the CPU
    has no such mode."""
    torch.set_flush_denormal(True)


def set_matmul_precision(precision: str) -> None:
    """Float32 products in this process at ``precision`` (``run.matmul_precision``:
    ``torch.set_float32_matmul_precision``). Every process that computes a run's numbers
    sets it (the run's own, Ray's evaluators and samplers), as with denormals."""
    torch.set_float32_matmul_precision(precision)


@dataclass(frozen=True)
class MediumPrecision:
    """What ``torch.set_float32_matmul_precision("medium")`` does to this CPU's float32
    products, measured on one fixed product (:func:`measure_medium_precision`): PyTorch
    leaves the choice to oneDNN, and it differs by CPU and library version, so no CPU flag
    predicts it (``benchmarks/results/matmul_precision.md``: an AVX512-BF16 CPU without AMX
    took a float32 path)."""

    kind: str
    """``bfloat16`` (inputs rounded to bfloat16, float32 sums), ``float32`` (another float32
    kernel: different rounding, no bfloat16 inputs) or ``unchanged`` (the same bits)."""
    largest_change: float
    """The largest difference from ``highest`` on the measured product."""
    speedup: float
    """``highest``'s time over ``medium``'s on a 256 x 256 product (best of several)."""

    def describe(self) -> str:
        """What the start-up line says of ``run.matmul_precision=medium`` here."""
        measured = f"measured on this CPU: {self.speedup:.2f}x highest's speed"
        if self.kind == "bfloat16":
            return f"float32 products from bfloat16-rounded inputs (run.matmul_precision=medium, {measured})"
        if self.kind == "float32":
            return (
                "run.matmul_precision=medium: this CPU's oneDNN takes another float32 path, "
                f"no bfloat16 rounding (at most {self.largest_change:.1e} from highest; {measured})"
            )
        return "run.matmul_precision=medium: no change on this CPU (the same bits as highest)"


def classify_medium_precision(
    exact: torch.Tensor, reduced: torch.Tensor, rounded: torch.Tensor
) -> str:
    """``bfloat16``, ``float32`` or ``unchanged``: whether ``reduced`` (a product at
    ``medium``) is ``exact`` (the product at ``highest``), or nearer the product of the
    bfloat16-rounded inputs ``rounded`` than ``exact`` is by far."""
    if torch.equal(reduced, exact):
        return "unchanged"
    to_rounded = float((reduced - rounded).abs().max())
    to_exact = float((reduced - exact).abs().max())
    return "bfloat16" if to_rounded < 0.1 * to_exact else "float32"


@functools.cache
def measure_medium_precision() -> MediumPrecision:
    """Run one product at ``highest`` and at ``medium`` on the CPU and see what ``medium``
    does (the process's precision is put back). A few milliseconds, once per process."""
    before = torch.get_float32_matmul_precision()
    generator = torch.Generator().manual_seed(0)
    left = torch.randn(64, 256, generator=generator)
    right = torch.randn(256, 64, generator=generator)
    square = torch.randn(256, 256, generator=generator)
    seconds = {}
    products = {}
    try:
        for precision in ("highest", "medium"):
            torch.set_float32_matmul_precision(precision)
            products[precision] = left @ right
            seconds[precision] = _best_time(lambda: square @ square)
    finally:
        torch.set_float32_matmul_precision(before)
    exact, reduced = products["highest"], products["medium"]
    rounded = (left.bfloat16().double() @ right.bfloat16().double()).float()
    return MediumPrecision(
        kind=classify_medium_precision(exact, reduced, rounded),
        largest_change=float((reduced - exact).abs().max()),
        speedup=seconds["highest"] / max(seconds["medium"], 1e-9),
    )


def _best_time(work: Callable[[], Any], repeats: int = 7) -> float:
    """The shortest of ``repeats`` timings of ``work`` after one warm-up call: the least
    disturbed by other processes on a shared machine."""
    work()
    best = math.inf
    for _ in range(repeats):
        started = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - started)
    return best


def describe_matmul_precision(precision: str, device: torch.device) -> str:
    """What the start-up line says of ``run.matmul_precision`` on ``device`` (nothing at
    ``highest``); on a CPU, ``medium`` is measured (:func:`measure_medium_precision`)."""
    if precision == "highest":
        return ""
    if device.type == "cuda":
        return f"float32 products in TF32 (run.matmul_precision={precision})"
    if precision == "high":
        return "run.matmul_precision=high: CPU products stay float32 (TF32 is a GPU format)"
    return measure_medium_precision().describe()


def available_env_threads(requested: int) -> int:
    """EnvPool worker threads: ``requested``, or one per available core when it is 0."""
    return requested or available_cores()


class TorchThreads:
    """PyTorch's CPU threads for a run: ``requested`` when it is a count, else (0, "auto")
    one per core while the machine is otherwise idle and 1 while other processes want the
    cores. :meth:`apply` re-checks; the run calls it before every generation or segment.

    Other processes' demand is measured, not guessed: the CPU time the run's cores spent
    busy since the last check (``/proc/stat``, those cores only) minus the run's own (this
    process's and its env worker processes':
    :func:`~neuroplug.runtime.own_processes.own_cpu_seconds`), per second. It follows a
    change within one check (at least :attr:`WINDOW_S` apart), and
    the first check covers the run's start-up. Where ``/proc/stat`` does not exist (macOS,
    Windows), auto is 1: the count that never collapses."""

    BUSY = 0.5
    """Cores' worth of other processes' CPU use from which the cores count as taken."""
    FREE = 0.25
    """... and below which they count as free again (between the two, the count stays)."""
    WINDOW_S = 1.0
    """Least seconds between two decisions (shorter windows are too coarse to read)."""

    def __init__(self, requested: int) -> None:
        self.requested = requested
        self.cores = available_cores()
        self._cpus = _cpu_ids()
        self._last = self._sample()
        self.threads = self.requested or (self.cores if self._last is not None else 1)
        self._set(self.threads)

    @property
    def auto(self) -> bool:
        """Whether the count follows the load."""
        return not self.requested

    def _sample(self) -> tuple[float, float, float] | None:
        """(wall clock, the cores' busy CPU seconds, the run's own CPU seconds)."""
        busy = _busy_cpu_seconds(self._cpus)
        if busy is None:
            return None
        return time.monotonic(), busy, own_cpu_seconds()

    def others_load(self) -> float | None:
        """Other processes' CPU use since the last reading, in cores; None when too soon
        to tell (or unknown)."""
        if self._last is None or time.monotonic() - self._last[0] < self.WINDOW_S:
            return None  # checked on the clock first: /proc/stat is read once a window
        now = self._sample()
        if now is None:
            return None
        wall = now[0] - self._last[0]
        others = (now[1] - self._last[1]) - (now[2] - self._last[2])
        self._last = now
        return max(0.0, others / wall)

    def choose(self) -> int:
        """The count to use now."""
        if not self.auto:
            return self.requested
        others = self.others_load()
        if others is None:
            return self.threads
        if others >= self.BUSY:
            return 1
        return self.cores if others < self.FREE else self.threads

    def apply(self) -> int:
        """Set PyTorch's CPU threads to :meth:`choose`; returns the count."""
        self.threads = self.choose()
        self._set(self.threads)
        return self.threads

    @contextlib.contextmanager
    def fixed(self) -> Iterator[None]:
        """Inside: the run's fixed count (``requested``, else one per core), whatever the
        load. An algorithm's own dense linear algebra (CMA-ES's products and
        eigendecomposition) gives different bits at different counts, so it runs at one
        count; the count the load chose comes back after. A part that gives the same bits
        at any count steps out with :func:`follow_the_load`."""
        before = torch.get_num_threads()
        self._set(self.requested or self.cores)
        outer, TorchThreads._fixing = TorchThreads._fixing, self
        try:
            yield
        finally:
            TorchThreads._fixing = outer
            self._set(before)

    _fixing: TorchThreads | None = None
    """The instance whose :meth:`fixed` block is running, if any."""

    @staticmethod
    def _set(threads: int) -> None:
        if torch.get_num_threads() != threads:
            torch.set_num_threads(threads)

    def describe(self) -> str:
        """For the start-up line: ``torch threads 2 (auto: follows the load)``."""
        return f"torch threads {self.threads}" + (" (auto: follows the load)" if self.auto else "")


PRODUCT_SHAPES = tuple(
    (batch, rows, inner, cols)
    for batch in (0, 1, 2)
    for rows in (1, 3, 100, 256)
    for inner in (3, 16, 400)
    for cols in (1, 16, 300)
)
"""``(batch, m, k, n)``: the float32 products :func:`products_ignore_thread_count` tries
(``batch`` 0: a plain matrix product, else a batched one), the shapes of small networks'
gradient steps: matrix-vector products (a value head's ``n = 1``), odd row counts (a
minibatch of 100), batched critics."""


@functools.cache
def products_ignore_thread_count(cores: int) -> bool:
    """Whether this CPU's float32 products give the same bits on one thread as on ``cores``
    (the two counts :class:`TorchThreads` chooses between), each of :data:`PRODUCT_SHAPES`
    with plain and transposed operands: measured once a process (milliseconds), as it
    depends on the kernels the CPU gets (on some CPUs a matrix-vector product of 100 rows
    does not: ``benchmarks/results/design_measurements.md``)."""
    if cores <= 1:
        return True
    generator = torch.Generator().manual_seed(0)
    operands = []
    for batch, rows, inner, cols in PRODUCT_SHAPES:
        lead = (batch,) if batch else ()
        left = torch.randn(*lead, rows, inner, generator=generator)
        right = torch.randn(*lead, cols, inner, generator=generator)
        operands += [(left, right.transpose(-1, -2)), (left, right.transpose(-1, -2).contiguous())]
    before = torch.get_num_threads()
    try:
        results = {}
        for count in (1, cores):
            torch.set_num_threads(count)
            results[count] = [torch.matmul(left, right) for left, right in operands]
    finally:
        torch.set_num_threads(before)
    return all(torch.equal(one, many) for one, many in zip(results[1], results[cores], strict=True))


@contextlib.contextmanager
def follow_the_load() -> Iterator[Callable[[], object]]:
    """Inside an algorithm's fixed-count math (:meth:`TorchThreads.fixed`), a part that
    runs at the count the load chooses, as a learner's steps do: gradient steps of small
    networks, which a fixed count of one per core makes several times slower beside one
    busy process (``benchmarks/results/design_measurements.md``), on a CPU whose products
    give the same bits at any count (:func:`products_ignore_thread_count`). On any other it
    runs on one thread, whatever the load: the count whose bits do not depend on the load,
    and which never collapses beside other processes. Yields a check to call between steps
    (rate-limited, cheap) so a long part follows a change. Outside such a block, or with a
    requested count, it changes nothing."""
    threads = TorchThreads._fixing
    if threads is None or not threads.auto:
        yield lambda: None
        return
    before = torch.get_num_threads()
    if not products_ignore_thread_count(threads.cores):
        threads._set(1)
        try:
            yield lambda: None
        finally:
            threads._set(before)
        return
    threads.apply()
    try:
        yield threads.apply
    finally:
        threads._set(before)
