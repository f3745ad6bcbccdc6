"""The web console: sagas, one saga's timeline, the operator's queue, and actions on one saga.

``sagagraph console`` serves it (the ``console`` extra: Starlette, Jinja2, uvicorn); from
Python, :func:`sagagraph.console.app.create_app` returns the ASGI app to serve any way.
Modules: ``source`` (the sagas, over the checkpointer and the event log), ``timeline`` (the
SVG picture), ``actions`` (the table of what an operator may do), ``security`` (binding,
token, CSRF), ``app`` (the pages), ``serve`` (the command).
"""
