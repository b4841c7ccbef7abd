"""``templates``: instances of known Core War strategies with freshly drawn constants.

Its prior is strategic: every warrior it writes is a working archetype (imp, dwarf, stone,
paper, scanner, core clear, imp ring, vampire) with random step sizes, bomb kinds, process
multipliers and decoys. Each warrior records its archetype and constants in a ``;template``
comment, so a mutation can re-draw one or two of them; sometimes it switches archetype (and it
always does for a parent it did not write). Every draw comes from the request's seed.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable

from dei_coreware.assembler import AssemblerSettings
from dei_coreware.operators._redcode import STEPS

from dei_framework.contract.operators import Operator, OperatorReply, OperatorRequest

Params = dict[str, int]
#: Probability that a mutation switches to another archetype.
SWITCH = 0.15
_TAG = re.compile(r"^;template\s+(\w+)((?:\s+\w+=-?\d+)*)\s*$", re.MULTILINE)


def _step(rng: random.Random, coresize: int) -> int:
    if rng.random() < 0.6:
        return rng.choice(STEPS) % coresize
    return rng.randrange(2, coresize - 1)


def _spl_prefix(count: int) -> str:
    """``count`` SPL 1 lines: 2**count processes run what follows."""
    return "".join("        spl     1\n" for _ in range(count))


def _decoys(count: int) -> str:
    return "".join(f"        dat     #{i + 1}, #{2 * i + 3}\n" for i in range(count))


class Archetype:
    """One strategy: how to draw its constants and how to write it."""

    def __init__(
        self,
        name: str,
        draw: Callable[[random.Random, int], Params],
        write: Callable[[Params, int], str],
        strategy: str,
    ) -> None:
        self.name = name
        self.draw = draw
        self.write = write
        self.strategy = strategy


def _imp(p: Params, coresize: int) -> str:
    return (
        _decoys(p["decoys"]) + "start\n" + _spl_prefix(p["spl"]) + "imp     mov.i   #0, 1\n"
        "        end     start\n"
    )


def _dwarf(p: Params, coresize: int) -> str:
    bomb = "dat     #0, #0" if p["bomb"] == 0 else "spl     #0, 0"
    return (
        f"step    equ     {p['step']}\n"
        + _decoys(p["decoys"])
        + "start\n"
        + _spl_prefix(p["spl"])
        + "loop    add.ab  #step, ptr\n"
        "        mov.i   ptr, @ptr\n"
        "        jmp     loop\n"
        f"ptr     {bomb}\n"
        "        end     start\n"
    )


def _stone(p: Params, coresize: int) -> str:
    return (
        f"step    equ     {p['step']}\n"
        "start   spl     0, 0\n"
        "loop    mov.i   bomb, @ptr\n"
        f"ptr     add.ab  #step, #{p['first']}\n"
        "        jmp     loop\n"
        f"bomb    dat     #0, #{p['tail']}\n" + _decoys(p["decoys"]) + "        end     start\n"
    )


def _paper(p: Params, coresize: int) -> str:
    return (
        f"dist    equ     {p['dist']}\n"
        "len     equ     10\n"
        "start\n" + _spl_prefix(p["spl"]) + "go      mov.ab  #go-src, src\n"
        "        mov.ab  #go-dst+dist, dst\n"
        "        mov.ab  #len, cnt\n"
        "copy    mov.i   >src, >dst\n"
        "        djn.b   copy, cnt\n"
        "        spl     go+dist\n"
        "        jmp     go\n"
        "src     dat     #0, #0\n"
        "dst     dat     #0, #0\n"
        "cnt     dat     #0, #0\n"
        "        end     start\n"
    )


def _scanner(p: Params, coresize: int) -> str:
    stun = "spl     #0, 0" if p["bomb"] == 0 else "dat     #0, #0"
    return (
        f"step    equ     {p['step']}\n"
        f"gap     equ     {p['gap']}\n"
        + "start\n"
        + _spl_prefix(p["spl"])
        + "scan    add.f   inc, look\n"
        "look    sne.i   gap, 0\n"
        "        jmp     scan\n"
        "        mov.i   stun, @look\n"
        "        mov.i   stun, *look\n"
        "        jmp     scan\n"
        f"stun    {stun}\n"
        "inc     dat     #step, #step\n"
        "        end     start\n"
    )


def _clear(p: Params, coresize: int) -> str:
    head = "clear   spl     #0, 0\n" if p["spl"] else "clear   nop     0, 0\n"
    return (
        head + "wipe    mov.i   bomb, >ptr\n"
        f"        djn.f   wipe, >ptr\n"
        f"ptr     dat     #0, #{p['gate']}\n"
        f"bomb    dat     #0, #{p['tail']}\n" + _decoys(p["decoys"]) + "        end     clear\n"
    )


def _ring(p: Params, coresize: int) -> str:
    step = pow(3, -1, coresize) if math.gcd(3, coresize) == 1 else coresize // 3 + 1
    return (
        f"step    equ     {step}\n" + _decoys(p["decoys"]) + "start   mov.i   imp, imp+step\n"
        "        mov.i   imp, imp+2*step\n"
        "        spl     first\n"
        "        spl     third\n"
        "        jmp     imp+step\n"
        "first   jmp     imp\n"
        "third   jmp     imp+2*step\n"
        "imp     mov.i   #0, step\n"
        "        end     start\n"
    )


def _vampire(p: Params, coresize: int) -> str:
    return (
        f"step    equ     {p['step']}\n"
        + "start\n"
        + _spl_prefix(p["spl"])
        + "loop    add.f   hop, fang\n"
        "        mov.i   fang, @fang\n"
        "        jmp     loop\n"
        "fang    jmp     pit-step, step\n"
        "hop     dat     #-step, #step\n"
        "pit     spl     0, 0\n"
        "        jmp     -1, 0\n"
        "        end     start\n"
    )


def _draw(**spaces: Callable[[random.Random, int], int]) -> Callable[[random.Random, int], Params]:
    def draw(rng: random.Random, coresize: int) -> Params:
        return {name: space(rng, coresize) for name, space in spaces.items()}

    return draw


def _between(low: int, high: int) -> Callable[[random.Random, int], int]:
    return lambda rng, coresize: rng.randint(low, high)


def _mod(k: int) -> Callable[[random.Random, int], int]:
    return lambda rng, coresize: k * rng.randint(1, coresize // k - 1)


ARCHETYPES: dict[str, Archetype] = {
    a.name: a
    for a in (
        Archetype(
            "imp",
            _draw(decoys=_between(0, 12), spl=_between(0, 9)),
            _imp,
            "imp (one self-copying MOV)",
        ),
        Archetype(
            "dwarf",
            _draw(step=_step, bomb=_between(0, 1), decoys=_between(0, 6), spl=_between(0, 6)),
            _dwarf,
            "dwarf bomber",
        ),
        Archetype(
            "stone",
            _draw(step=_mod(5), first=_between(2, 400), tail=_between(0, 9), decoys=_between(0, 8)),
            _stone,
            "stone with a SPL 0 spawner",
        ),
        Archetype(
            "paper",
            _draw(dist=_between(100, 7900), spl=_between(0, 5)),
            _paper,
            "paper (replicator)",
        ),
        Archetype(
            "scanner",
            _draw(step=_step, gap=_between(2, 20), bomb=_between(0, 1), spl=_between(0, 2)),
            _scanner,
            "scanner with SPL stun bombs",
        ),
        Archetype(
            "clear",
            _draw(
                gate=_between(3, 60),
                tail=_between(0, 9),
                spl=_between(0, 1),
                decoys=_between(0, 20),
            ),
            _clear,
            "core clear",
        ),
        Archetype("ring", _draw(decoys=_between(0, 10)), _ring, "three-point imp ring"),
        Archetype(
            "vampire", _draw(step=_step, spl=_between(0, 3)), _vampire, "vampire with a SPL 0 pit"
        ),
    )
}


def write_archetype(name: str, params: Params, coresize: int) -> str:
    """A complete warrior of archetype ``name`` with constants ``params``."""
    archetype = ARCHETYPES[name]
    tag = " ".join(f"{k}={v}" for k, v in params.items())
    return (
        f";redcode-94\n;name {name} template\n;author DEI gp/templates operators\n"
        f";strategy {archetype.strategy}\n;template {name} {tag}\n"
        + archetype.write(params, coresize)
    )


def read_tag(text: str) -> tuple[str, Params] | None:
    """The ``;template`` archetype and constants of a warrior this operator wrote."""
    match = _TAG.search(text)
    if not match or match.group(1) not in ARCHETYPES:
        return None
    params = {k: int(v) for k, v in re.findall(r"(\w+)=(-?\d+)", match.group(2))}
    return match.group(1), params


class TemplateOperator(Operator):
    """Writes and re-parameterises strategy archetypes.

    Args:
        settings: The domain's assembler settings (core size).
        label: Name in logs.
    """

    offline = True
    max_in_flight = 4

    def __init__(self, settings: AssemblerSettings | None = None, label: str = "templates") -> None:
        self.settings = settings or AssemblerSettings()
        self.label = label

    async def propose(self, request: OperatorRequest) -> OperatorReply:
        return OperatorReply(text=self.write(request))

    def write(self, request: OperatorRequest) -> str:
        """The reply text for a request (synchronous, for tests and benchmarks)."""
        rng = random.Random(request.seed)
        coresize = self.settings.coresize
        tagged = read_tag(request.parent.text) if request.parent is not None else None
        if request.kind != "mutate" or tagged is None or rng.random() < SWITCH:
            current = tagged[0] if tagged is not None else None
            name = rng.choice(sorted(set(ARCHETYPES) - {current}))
            return write_archetype(name, ARCHETYPES[name].draw(rng, coresize), coresize)
        name, params = tagged
        fresh = ARCHETYPES[name].draw(rng, coresize)
        params = {key: params.get(key, value) for key, value in fresh.items()}
        for key in rng.sample(sorted(fresh), k=min(len(fresh), rng.choice((1, 1, 2)))):
            params[key] = fresh[key]
        return write_archetype(name, params, coresize)
