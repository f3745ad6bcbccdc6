"""The saga kernel: what every coordination style stands on.

The participant contract (:mod:`~sagagraph.saga.protocol`), step execution with its retries
and timeouts (one attempt loop, a sync driver in :mod:`~sagagraph.saga.execution` and an async
one in :mod:`~sagagraph.saga.async_execution`), the records every style writes
(:mod:`~sagagraph.saga.records`), events and the JSON view (:mod:`~sagagraph.saga.view`), ids,
escalation, the router's guard, and the names every part shares
(:mod:`~sagagraph.saga.names`). It imports nothing else of sagagraph but ``errors`` and
``redaction``.
"""
