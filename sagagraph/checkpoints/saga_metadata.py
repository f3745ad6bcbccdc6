"""What each checkpoint's metadata says of its saga, so listing needs no checkpoint blob.

Every saver sagagraph opens passes the metadata of each checkpoint it stores through
:func:`stamp`. Listing and recovery then read the metadata column alone.
"""

from __future__ import annotations

from langgraph.checkpoint.base import Checkpoint, CheckpointMetadata


def stamp(checkpoint: Checkpoint, metadata: CheckpointMetadata) -> CheckpointMetadata:
    """``metadata`` with the saga's summary added (nothing yet: filled in by the index work)."""
    return metadata
