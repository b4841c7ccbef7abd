"""The layouts of OpenEvolve's example folders (its repository's ``examples/``, read at commit
75bc298), as data: what each folder names its files, what its config asks of the grid and the
cascade, what its evaluator returns and imports, and which look-alike of
``openevolve_lookalikes/`` stands for it (or why none can run here). The folders added
since (arc_benchmark, background_blur, claude_code_quickstart, tsp_tour_minimization's
folder program) were read at commit 411fb59.

Facts only, gathered by reading the folders; no OpenEvolve code is copied. The test
``test_openevolve_layouts.py`` runs each look-alike through ``dei-run``.
"""

from __future__ import annotations

from pathlib import Path

import attrs

#: The look-alike task folders.
LOOKALIKES = Path(__file__).resolve().parent / "openevolve_lookalikes"
#: What every example's evaluator may import from OpenEvolve (DEI's stand-in provides it).
OPENEVOLVE_IMPORTS = ("openevolve.evaluation_result.EvaluationResult",)


@attrs.frozen(kw_only=True)
class Layout:
    """One example folder of OpenEvolve's.

    Attributes:
        example: Its path under ``examples/``; a trailing ``*`` stands for every sibling of
            the same layout (``algotune/*``).
        program: The initial program's file name.
        evaluator: The evaluator's file name.
        config: The config file(s): ``config.yaml``, several names, or none.
        features: ``database.feature_dimensions`` (empty: OpenEvolve's default, complexity
            and diversity; DEI's default is complexity).
        stages: The evaluator's cascade functions (``evaluate_stage1``...), in order.
        thresholds: ``evaluator.cascade_thresholds`` (empty: the default or no cascade).
        cascade: ``evaluator.cascade_evaluation`` (``None``: not set, true by default).
        returns: ``dict``, ``EvaluationResult``, or ``dict+artifacts`` (a dict with an
            ``artifacts`` mapping).
        openevolve: What the evaluator imports from OpenEvolve.
        third_party: Third-party modules the evaluator or the program imports.
        lookalike: The folder of ``openevolve_lookalikes/`` with this layout, or empty.
        unavailable: Why the example itself cannot run here (empty: it can).
    """

    example: str
    program: str = "initial_program.py"
    evaluator: str = "evaluator.py"
    config: tuple[str, ...] = ("config.yaml",)
    features: tuple[str, ...] = ()
    stages: tuple[str, ...] = ()
    thresholds: tuple[float, ...] = ()
    cascade: bool | None = None
    returns: str = "dict"
    openevolve: tuple[str, ...] = ()
    third_party: tuple[str, ...] = ()
    lookalike: str = ""
    unavailable: str = ""


_STAGES_12 = ("evaluate_stage1", "evaluate_stage2")
_MATHS = "the same layout as the other alphaevolve_math_problems"

LAYOUTS: tuple[Layout, ...] = (
    Layout(
        example="function_minimization",
        stages=_STAGES_12,
        thresholds=(1.3,),
        returns="EvaluationResult",
        openevolve=OPENEVOLVE_IMPORTS,
        third_party=("numpy",),
        lookalike="result_cascade",
    ),
    Layout(
        example="algotune/*",
        stages=_STAGES_12,
        thresholds=(0.5, 0.8),
        cascade=True,
        returns="EvaluationResult",
        openevolve=OPENEVOLVE_IMPORTS,
        third_party=("numpy", "scipy", "yaml", "AlgoTuneTasks"),
        lookalike="result_cascade",
        unavailable="AlgoTune (AlgoTuneTasks) is not installed: every program scores 0",
    ),
    Layout(
        example="circle_packing",
        config=("config_phase_1.yaml", "config_phase_2.yaml"),
        stages=_STAGES_12,
        returns="dict",
        third_party=("numpy", "matplotlib"),
        lookalike="phase_configs",
    ),
    Layout(
        example="circle_packing_with_artifacts",
        config=("config.yaml", "config_phase_1.yaml", "config_phase_2.yaml"),
        features=("radius_variance", "spatial_spread"),
        stages=_STAGES_12,
        thresholds=(0.5, 0.75),
        cascade=True,
        returns="EvaluationResult",
        openevolve=OPENEVOLVE_IMPORTS,
        third_party=("numpy", "matplotlib"),
        lookalike="artifacts_features",
    ),
    Layout(
        example="k_module_problem",
        features=("complexity", "diversity"),
        cascade=False,
        returns="dict+artifacts",
        lookalike="computed_diversity",
    ),
    Layout(
        example="alphaevolve_math_problems/*",
        features=("score", "complexity"),
        third_party=("numpy", "scipy", "sympy", "jax", "optax", "tqdm"),
        lookalike="computed_score",
        unavailable="a third of them import jax and optax, not installed here",
    ),
    Layout(
        example="web_scraper_optillm",
        features=("score", "complexity"),
        returns="dict+artifacts",
        third_party=("bs4", "requests"),
        lookalike="computed_score",
        unavailable="the program imports bs4 and the run needs an optillm proxy",
    ),
    Layout(
        example="signal_processing",
        stages=_STAGES_12,
        thresholds=(0.3, 0.6),
        cascade=True,
        third_party=("numpy", "scipy"),
        lookalike="two_thresholds",
    ),
    Layout(
        example="sldbench",
        program="init_program.py",
        config=tuple(
            f"configs/{name}_scaling_law.yaml"
            for name in (
                "data_constrained",
                "domain_mixture",
                "easy_question",
                "lr_bsz",
                "moe",
                "parallel",
                "sft",
                "vocab",
            )
        ),
        features=("combined_score", "complexity", "diversity"),
        thresholds=(0.3, 0.6),
        cascade=False,
        third_party=("numpy", "scipy", "datasets"),
        lookalike="renamed_files",
        unavailable="the evaluator's data_loader imports datasets and downloads from the "
        "Hugging Face Hub",
    ),
    Layout(
        example="attention_optimization",
        config=("config.yaml", "configs/*.yaml"),
        thresholds=(0.5, 0.75),
        cascade=True,
        lookalike="computed_score",
        unavailable="the evaluator runs MLIR's mlir-opt, not installed here",
    ),
    Layout(
        example="mlx_metal_kernel_opt",
        third_party=("numpy", "mlx", "mlx_lm"),
        lookalike="computed_score",
        unavailable="MLX runs on Apple silicon only (macOS)",
    ),
    Layout(
        example="online_judge_programming",
        thresholds=(1.0,),
        cascade=False,
        lookalike="computed_score",
        unavailable="the evaluator submits to Kattis over the network with an account",
    ),
    Layout(
        example="background_blur",
        features=("complexity", "ssim"),
        stages=(*_STAGES_12, "evaluate_stage3"),
        thresholds=(0.5, 0.5),
        cascade=True,
        returns="EvaluationResult",
        openevolve=OPENEVOLVE_IMPORTS,
        third_party=("numpy",),
        lookalike="result_cascade",
    ),
    Layout(
        example="claude_code_quickstart",
        stages=_STAGES_12,
        thresholds=(1.3,),
        returns="EvaluationResult",
        openevolve=OPENEVOLVE_IMPORTS,
        third_party=("numpy",),
        lookalike="result_cascade",
    ),
    Layout(
        example="arc_benchmark",
        cascade=False,
        returns="EvaluationResult",
        openevolve=OPENEVOLVE_IMPORTS,
        third_party=("numpy",),
        lookalike="result_cascade",
        unavailable="the evaluator reads the ARC Prize data from a fixed path of its author's",
    ),
)

#: Example folders whose initial program is not Python: the python domain refuses them.
NOT_PYTHON: tuple[tuple[str, str], ...] = (
    ("r_robust_regression", "initial_program.r: an R program (and Rscript)"),
    ("rust_adaptive_sort", "initial_program.rs: a Rust program (and cargo)"),
    ("llm_prompt_optimization", "initial_prompt.txt: a prompt evolved with an LLM judge"),
    ("lm_eval", "initial_content_stub.txt: a text stub for lm-eval-harness"),
    ("symbolic_regression", "no initial program: generated per problem by its scripts"),
    (
        "tsp_tour_minimization",
        "initial_program/: a folder of C++ and Python files its own script joins into one text",
    ),
)
