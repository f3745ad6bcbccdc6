"""A process that holds one saga's lease until it is killed.

    python -m tests.support.lease_holder DB_URL SAGA_ID

It prints ``HELD`` once it holds the lease, then sleeps.
"""

from __future__ import annotations

import sys
import time

from sagagraph.checkpoints.factory import open_checkpointer
from sagagraph.graph.leases import saga_lease


def main() -> None:
    db, saga_id = sys.argv[1:3]
    with open_checkpointer(db) as checkpointer, saga_lease(checkpointer, saga_id):
        print("HELD", flush=True)
        while True:
            time.sleep(60)


if __name__ == "__main__":
    main()
