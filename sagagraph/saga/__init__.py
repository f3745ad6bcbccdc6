"""The saga kernel: what every coordination style stands on.

The participant contract (:mod:`~sagagraph.saga.protocol`), step execution with its retries
and timeouts (one attempt loop, written once and driven under ``invoke`` and ``ainvoke``:
:mod:`~sagagraph.saga.execution`), the records every style writes
(:mod:`~sagagraph.saga.records`), events and the JSON view (:mod:`~sagagraph.saga.view`), the
hooks that observe a run (:mod:`~sagagraph.saga.hooks`), routing (:mod:`~sagagraph.saga.routes`,
:mod:`~sagagraph.saga.guard`), ids, escalation, and the names every part shares
(:mod:`~sagagraph.saga.names`). It imports nothing else of sagagraph but ``errors``,
``redaction`` and ``storable_text``.
"""
