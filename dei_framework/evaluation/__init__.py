"""Evaluation: scoring programs in worker processes, on a Dask cluster, or sandboxed.

:mod:`~dei_framework.evaluation.local` (the evaluator and the local process pool, with their
parts in the private ``_*`` modules), ``dask_*`` (the Dask backend, its job paths, options and
version checks, its worker side and its version guard) and ``sandbox/`` (limits and isolation
for programs that run code).

May import: :mod:`dei_framework.contract`, :mod:`dei_framework.search`.

Modules:
    outcome.py              Outcome and Parsed (what evaluating or parsing one program gave),
                            the checks a domain's answer must pass, evaluate_parsed
    local.py                Evaluator: parse + evaluate + validate off the event loop, worker
                            deaths, in-process batches; re-exports the names of its parts below
    _batching.py            Evaluator batching: one loop turn's evaluations, cut into jobs per
                            worker
    _jobs.py                what a job runs on any backend: parse, evaluate a batch, generality
    _local_backend.py       LocalBackend (the ``local`` process pool, the generality lane)
    _pool_worker.py         a pool worker: signals blocked, parent watched, domain and sets held
    _opponent_sets.py       OpponentSet, the set files' directories, orphaned ones removed
    dask_backend.py         the ``dask`` backend: jobs on a Dask cluster (distributed imported
                            lazily)
    dask_jobs.py            how a ``dask`` job travels: straight to a worker's actor, or as a
                            task
    dask_options.py         reaching a cluster: distributed imported lazily, TLS files and flags
    dask_connect.py         connecting to a cluster: a local one started, the client opened
    dask_versions.py        the versions a ``dask`` run's workers must run, checked at connect
    dask_calls.py           calls to a Dask client bounded in time, shared by the backend and
                            guard
    dask_worker.py          what stays on a Dask worker for a run: domain, opponents, the actor
    dask_guard.py           the worker plugin that refuses a worker joining on another version
    semaphores.py           pool semaphores released; a quit-at-once exit leaves none half
                            released
    sandbox/                per-candidate limits and isolation (``--sandbox
                            none|process|isolated``; its docstring lists its modules)
"""
