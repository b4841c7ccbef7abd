"""A run's configuration: every ``dei-run`` setting, where it comes from and what it may be.

May import: the layers below the runtime (:mod:`dei_framework.contract`,
:mod:`dei_framework.evaluation`, :mod:`dei_framework.plugin` ...) and
:mod:`dei_framework.runtime.budget.usage` (the compute axes a budget is counted on).

Modules:
    resolve.py              flags + TOML file + preset -> RunConfig: one order of precedence
                            (Sources); the sandbox policy chosen, once
    run_config.py           RunConfig, each field with its key, flag and help
    record.py               NodeConfig; config.json: a RunConfig as JSON and back (older
                            records' defaults)
    checks.py               the checks a RunConfig passes: counts, seconds, members, across
                            fields; per-node endpoints (--operator MODEL@URL), a shared
                            --api-base checked
    settings.py             a run setting's key, flag, help and docs group; flags that are no
                            key; named protocols (--preset dei-paper)

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""
