"""The Blackboard mode: the saga's participants as knowledge sources over a versioned board.

Every knowledge source reads the shared board (kept in the checkpointed LangGraph state) and
contributes entries to it; a controller reads the board and decides who acts next. See
:mod:`sagagraph.blackboard.builder` for the graph and docs/blackboard.md for the semantics.
"""
