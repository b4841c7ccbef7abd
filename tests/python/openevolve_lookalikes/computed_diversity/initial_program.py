"""Choose one option for each of four modules; only the right combination scores fully
(a look-alike of a combinatorial task with the built-in features)."""


# EVOLVE-BLOCK-START
def configure():
    """One option index per module."""
    loader = 0
    parser = 1
    solver = 2
    writer = 0
    return [loader, parser, solver, writer]


# EVOLVE-BLOCK-END
