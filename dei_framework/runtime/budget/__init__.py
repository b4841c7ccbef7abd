"""A run's budget: equal compute across nodes, hard caps, and one call's account.

May import: the layers below the runtime (:mod:`dei_framework.contract` ...).

Modules:
    ledger.py               BudgetLedger: equal compute, hard caps, reservations
    call_meter.py           CallMeter: one call's account with the ledger, attempt by attempt
    usage.py                what the ledger keeps: compute axes, split_budget, NodeCaps,
                            NodeUsage; a run's quotas, caps and compute limit

Internal: not public API (the public names are :mod:`dei_framework`'s); anything here may
change in any release.
"""
