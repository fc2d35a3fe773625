"""Compiled kernels that a process loads only once they have paid for themselves.

Several steps have a numpy formulation and a compiled one (numba) that gives the same results,
several times faster. The compiled one has a fixed price: importing numba and loading its cached
machine code costs about half a second of CPU in a new process. So a process rents before it
buys (the classic ski-rental rule, within a factor two of the best choice made knowing the
future): it uses numpy until it has spent about that price on the step, then loads the kernels
for good; a step big enough to pay on its own loads them at once. A one-shot command and a small
site never load numba; a process that does much of the work loads it early.

One :class:`Rental` per kernel module, counting the work in the unit its numpy formulation pays
by (values put through it, hashes looked up...).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType


class Rental:
    """The kernels of ``module``, bought once the numpy formulations have done ``price`` units of
    work in this process, or at once for a step of ``at_once`` units or more.

    Unlocked: two threads may both count a step or both load the kernels; either way the
    answers are the same (the two formulations agree exactly).

    Example:
        >>> rental = Rental("math", price=10, at_once=5)
        >>> rental.kernels(4) is None, rental.kernels(4) is None, rental.kernels(4) is None
        (True, True, False)
    """

    def __init__(self, module: str, price: int, at_once: int) -> None:
        if price < 1 or at_once < 1:
            raise ValueError(f"price and at_once must be >= 1, got {price} and {at_once}")
        self.module, self.price, self.at_once = module, price, at_once
        self.spent = 0  # work this process has put through the numpy formulations
        self.bought = False  # the kernels are loaded: every step uses them
        self._loaded: ModuleType | None = None

    def kernels(self, work: int) -> ModuleType | None:
        """The kernels when they pay for a step of ``work`` units, else None (numpy)."""
        if not self.bought:
            self.spent += work
            self.bought = work >= self.at_once or self.spent >= self.price
        return self.buy() if self.bought else None

    def buy(self) -> ModuleType:
        """The kernels, loaded now if need be (numba compiles them on first use, or loads its
        disk cache); every later step uses them. Held once loaded: a step may be as small as
        one verification (``features.neardup``), and ``import_module`` on every call took 1.7
        of the 26.7 s a 30,000-article leader pass spent under cProfile."""
        self.bought = True
        if self._loaded is None:
            self._loaded = importlib.import_module(self.module)
        return self._loaded

    @contextmanager
    def forced(self, compiled: bool) -> Iterator[None]:
        """Take the compiled kernels (as once they paid) or numpy (never buy) within the block,
        whatever was spent: for tests that check both formulations agree."""
        saved = self.spent, self.bought, self.at_once, self.price
        self.bought, self.spent = compiled, 0
        self.at_once = self.price = 1 << 62
        try:
            yield
        finally:
            self.spent, self.bought, self.at_once, self.price = saved
