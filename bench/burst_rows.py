"""Section 13's figures and rows (:mod:`bench.burst` measures them)."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bench.common import Row

S13 = "13. Burst vs protocol floor"
TARGETS = {"sqlite": 1.2, "postgres": 1.5}  # Parlour / floor, issue 31
LABELS = {"sqlite": "SQLite", "postgres": "PostgreSQL, 2 replicas (webhook)"}


@dataclass(frozen=True, slots=True)
class RunFigures:
    side: str  # floor, clients, sqlite or postgres
    chats: int
    wall: float  # push to the last final edit, seconds
    right: int
    wrong: int
    missing: int
    starts: tuple[float, ...]  # model requests' arrival after the push, sorted
    typing_last: float  # the last typing action after the push
    calls: Mapping[str, int]  # Bot API calls by method, getUpdates aside
    failed: Mapping[str, int]  # failed calls by method and error
    cpu: float  # CPU seconds of this process (all threads), push to the last edit
    telegram_cpu: float  # ... of the fake Bot API's process
    llm_cpu: float  # ... of the fake model's process
    acked: float | None  # webhooks: the last update's 200 after the push

    def spread(self) -> tuple[float, float, float]:
        """Median, p90 and max of the model requests' arrival after the push."""
        if not self.starts:
            return (float("nan"),) * 3
        p90 = self.starts[min(len(self.starts) - 1, int(0.9 * len(self.starts)))]
        return statistics.median(self.starts), p90, self.starts[-1]


@dataclass(frozen=True, slots=True)
class Pair:
    backend: str
    floor: RunFigures
    clients: RunFigures  # the floor's calls through aiogram and the openai SDK
    parlour: RunFigures

    @property
    def ratio(self) -> float:
        return self.parlour.wall / self.floor.wall

    @property
    def clients_ratio(self) -> float:
        """What the real clients alone cost over the bare floor."""
        return self.clients.wall / self.floor.wall

    @property
    def own_ratio(self) -> float:
        """What Parlour costs over the real clients alone."""
        return self.parlour.wall / self.clients.wall


def _med(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def _spread(runs: Sequence[RunFigures]) -> str:
    p50, p90, top = (_med([r.spread()[i] for r in runs]) for i in range(3))
    return f"{p50:.2f} / {p90:.2f} / {top:.2f} s"


def _answers(runs: Sequence[RunFigures]) -> tuple[str, bool]:
    worst = min(runs, key=lambda r: r.right)
    return (
        f"{worst.right}/{worst.chats} (wrong {worst.wrong}, missing {worst.missing})",
        all(r.right == r.chats for r in runs),
    )


def _fakes_cpu(runs: Sequence[RunFigures]) -> str:
    return f"{_med([r.telegram_cpu for r in runs]):.2f} + {_med([r.llm_cpu for r in runs]):.2f}"


def _calls(run: RunFigures) -> str:
    return ", ".join(f"{m} {n / run.chats:g}" for m, n in sorted(run.calls.items()))


def burst_rows(pairs: Sequence[Pair]) -> list[Row]:
    """Per backend and chat count: the figures against the floor, then what explains them."""
    groups: dict[tuple[str, int], list[Pair]] = {}
    for pair in pairs:
        groups.setdefault((pair.backend, pair.floor.chats), []).append(pair)
    rows: list[Row] = []
    for (backend, chats), group in groups.items():
        rows += _figures(backend, chats, group) + _details(LABELS[backend], chats, group)
    return rows


def _figures(backend: str, chats: int, group: Sequence[Pair]) -> list[Row]:
    floors, parlours = [p.floor for p in group], [p.parlour for p in group]
    ratios = [p.ratio for p in group]
    ratio, target, label = _med(ratios), TARGETS[backend], LABELS[backend]
    floor_ok, parlour_ok = _answers(floors), _answers(parlours)
    clients_ok, clients = _answers([p.clients for p in group]), [p.clients_ratio for p in group]
    return [
        Row(
            S13,
            f"{chats} private chats x 1 message at once, 1 s model: floor (bare aiohttp loop,"
            " same wire calls)",
            f"{_med([f.wall for f in floors]):.2f} s",
        ),
        Row(S13, f"Parlour, {label}", f"{_med([p.wall for p in parlours]):.2f} s"),
        Row(
            S13,
            f"ratio Parlour / floor, {label}, {chats} chats (median of {len(group)} pairs:"
            f" {', '.join(f'{r:.2f}' for r in ratios)})",
            f"{ratio:.2f}x",
            f"<= {target}x",
            ratio <= target,
        ),
        Row(
            S13,
            "floor through the real clients (the same calls made with aiogram and the openai SDK,"
            " used as Parlour uses them) / floor",
            f"{_med(clients):.2f}x ({_med([p.clients.wall for p in group]):.2f} s)",
        ),
        Row(
            S13,
            f"... Parlour, {label} / the floor through the real clients",
            f"{_med([p.own_ratio for p in group]):.2f}x",
        ),
        Row(S13, "answers right: floor", floor_ok[0], f"{chats}/{chats}", floor_ok[1]),
        Row(
            S13,
            "... the floor through the real clients",
            clients_ok[0],
            f"{chats}/{chats}",
            clients_ok[1],
        ),
        Row(S13, f"... Parlour, {label}", parlour_ok[0], f"{chats}/{chats}", parlour_ok[1]),
    ]


def _details(label: str, chats: int, group: Sequence[Pair]) -> list[Row]:
    floors, parlours = [p.floor for p in group], [p.parlour for p in group]
    rows = [
        Row(
            S13, "model requests arrive after the push, median / p90 / max: floor", _spread(floors)
        ),
        Row(S13, f"... Parlour, {label}", _spread(parlours)),
        Row(
            S13,
            "last typing action after the push: floor / Parlour",
            f"{_med([f.typing_last for f in floors]):.2f} /"
            f" {_med([p.typing_last for p in parlours]):.2f} s",
        ),
    ]
    acked = [p.acked for p in parlours if p.acked is not None]
    if acked:
        rows.append(
            Row(S13, "... Parlour: the last webhook acknowledged (stored)", f"{_med(acked):.2f} s")
        )
    rows += [
        Row(S13, "Bot API calls per chat: floor", _calls(floors[0])),
        Row(S13, f"... Parlour, {label}", _calls(parlours[0])),
        Row(
            S13,
            "CPU per chat, push to last edit (this process, all threads): floor / floor through"
            " the clients / Parlour",
            f"{_med([f.cpu / chats for f in floors]) * 1000:.2f} /"
            f" {_med([p.clients.cpu / chats for p in group]) * 1000:.2f} /"
            f" {_med([p.cpu / chats for p in parlours]) * 1000:.2f} ms",
        ),
        Row(
            S13,
            "CPU of the fakes meanwhile, Bot API + model: floor / Parlour",
            f"{_fakes_cpu(floors)} / {_fakes_cpu(parlours)} s",
        ),
    ]
    failed = Counter[str]()
    for run in (*floors, *(p.clients for p in group), *parlours):
        failed.update({f"{run.side}: {what}": n for what, n in run.failed.items()})
    if failed:
        shown = "; ".join(f"{what} x{n}" for what, n in failed.most_common(4))
        rows.append(Row(S13, "failed Bot API calls, all runs", shown))
    return rows
