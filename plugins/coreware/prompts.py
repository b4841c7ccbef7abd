"""Prompts for LLM operators: a compact ICWS'94 reference, and new-warrior and mutation requests.

The system prompt is what a model needs to write valid, pMARS-compatible Redcode without
p-space; the user prompts say what to do and how to answer (one ```redcode block), and for a
mutation carry the parent's source, its fitness, its behaviour in words and the assembler's
last complaint about its lineage.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from dei_framework.contract.records import Candidate, Message

if TYPE_CHECKING:
    from dei_coreware.domain import CorewarOptions

SYSTEM = """\
You are an expert Core War programmer. You write warriors in ICWS'94 Redcode for a \
pMARS-compatible simulator. Warriors share one circular core of {coresize} cells; every \
address is relative to the instruction being executed and taken modulo {coresize}. Each \
warrior takes turns executing one instruction of its process queue per cycle. A process dies \
when it executes DAT (or divides by zero); a warrior dies when its last process dies. The round \
ends after {cycles} cycles or when one warrior is left.

Instruction format:  [label] OPCODE[.MODIFIER] [mode]A-field, [mode]B-field   ; comment

Opcodes
  DAT  kill the process that executes it (also used as data and as a bomb)
  MOV  copy A to B (MOV.I copies a whole instruction)
  ADD SUB MUL DIV MOD  arithmetic: B = B op A (DIV/MOD by zero kills the process)
  JMP  jump to A          JMZ  jump to A if B is zero      JMN  jump to A if B is not zero
  DJN  decrement B, jump to A if the result is not zero
  SPL  start a new process at A (the current one continues with the next instruction);
       at most {processes} processes per warrior
  SEQ (= CMP)  skip the next instruction if A equals B     SNE  skip if A differs from B
  SLT  skip the next instruction if A is less than B        NOP  do nothing

Modifiers (which fields an instruction reads and writes)
  .A  A to A     .B  B to B     .AB  A to B     .BA  B to A
  .F  A to A and B to B     .X  A to B and B to A     .I  whole instruction (MOV, SEQ, SNE)
  Without a modifier the usual ICWS'94 defaults apply (e.g. MOV $x, $y is MOV.I).

Addressing modes
  #  immediate (the number itself)        $  direct (default: the cell at that offset)
  @  indirect through the B-field          *  indirect through the A-field
  <  like @ but decrement the B-field first    >  like @ but increment the B-field afterwards
  {{  like * but decrement the A-field first    }}  like * but increment the A-field afterwards

Assembler rules
  - Labels start with a letter and may end with ':'; a reference to a label is its distance
    from the current instruction. Constants: `name EQU expression`; arithmetic + - * / % works.
  - `ORG label` (or `END label`) sets the first instruction to run; `END` ends the source.
  - Start the file with `;redcode-94`, then `;name ...` and `;author ...` comment lines.
  - At most {maxlength} instructions. Warriors are loaded at least {mindistance} cells apart.
  - Do not use p-space (LDP/STP, PIN) and do not rely on any other non-standard extension.

Example: a bomber that drops a DAT on every fourth cell
```redcode
;redcode-94
;name Example Bomber
;author example
step    equ     4
loop    add.ab  #step, bomb
        mov.i   bomb, @bomb
        jmp     loop
bomb    dat     #0, #0
        end     loop
```

Answer with exactly one ```redcode code block holding the complete warrior, followed by at most \
two sentences on its strategy."""

#: What a warrior's fitness means, for the mutation prompt.
_FITNESS = (
    "Fitness is its share of surviving time against all opponents at once, times the number of "
    "warriors in the battle: surviving to the end alongside everyone scores 1.0, outliving "
    "everyone scores the number of warriors, dying at once scores 0."
)


def system_prompt(options: CorewarOptions) -> str:
    """The reference every request starts with (values follow the domain's MARS settings)."""
    return SYSTEM.format(
        coresize=options.coresize,
        cycles=options.cycles,
        processes=options.processes,
        maxlength=options.maxlength,
        mindistance=options.mindistance,
    )


def describe_behaviour(descriptor: dict | None) -> str:
    """TSP and MC in words (what the grid axes measure)."""
    if not descriptor:
        return "its behaviour was not measured"
    parts = []
    tsp = descriptor.get("tsp")
    if tsp is not None:
        if tsp < 1:
            parts.append("it never starts extra processes (no successful SPL)")
        else:
            parts.append(f"it starts about {tsp:.0f} extra processes per round (SPL)")
    mc = descriptor.get("mc")
    if mc is not None:
        parts.append(f"its processes execute about {mc:.0f} distinct core cells per round")
    length = descriptor.get("length")
    if length is not None:
        parts.append(f"it is {length:.0f} instructions long")
    return "; ".join(parts)


def _elite_block(title: str, elite: Candidate) -> str:
    return (
        f"{title} (fitness {elite.fitness:.3f}; {describe_behaviour(dict(elite.descriptor))}):\n"
        f"```redcode\n{elite.text.rstrip()}\n```"
    )


def new_prompt() -> str:
    """The request for a warrior from scratch."""
    return (
        "Write a new Core War warrior that survives long and kills its opponents. It will "
        "fight several warriors at once: bombers, scanners, replicators and imps. Pick one "
        "clear strategy (for example a bomber, a scanner, a replicator/paper, an imp ring or a "
        "core clear, or a combination) and choose its constants carefully.\n\n"
        "Reply with one ```redcode block."
    )


def mutate_prompt(
    parent: Candidate, others: Sequence[Candidate] = (), feedback: str | None = None
) -> str:
    """The request to improve ``parent``, with other elites and the lineage's last error."""
    sections = [_elite_block("Here is a warrior to improve", parent), _FITNESS]
    if feedback:
        sections.append(
            "A previous variation of this warrior did not assemble. The assembler said:\n"
            f"    {feedback}\nAvoid that mistake."
        )
    for index, other in enumerate(others, 1):
        sections.append(_elite_block(f"Another successful warrior #{index}, for ideas", other))
    sections.append(
        "Write an improved variant: change constants, add or remove instructions, combine it "
        "with ideas from the other warriors, or change its strategy where that helps. Keep "
        "what already works.\n\nReply with one ```redcode block holding the complete warrior."
    )
    return "\n\n".join(sections)


def build_messages(
    kind: str,
    *,
    parent: Candidate | None,
    others: Sequence[Candidate],
    feedback: str | None,
    options: CorewarOptions,
) -> list[Message]:
    """System prompt plus the ``new`` or ``mutate`` request."""
    if kind == "mutate" and parent is not None:
        user = mutate_prompt(parent, others, feedback)
    else:
        user = new_prompt()
    return [
        {"role": "system", "content": system_prompt(options)},
        {"role": "user", "content": user},
    ]
