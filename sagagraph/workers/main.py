"""The Celery app from the environment, for Celery's own command line:

    SAGAGRAPH_QUEUE=amqp://... SAGAGRAPH_DB=postgresql://... celery -A sagagraph.workers.main worker
    celery -A sagagraph.workers.main beat        # takes over orphaned sagas every minute

``SAGAGRAPH_APPS`` (comma-separated ``module:factory``) names the sagas its workers run
(default: the paper saga, :data:`~sagagraph.agents.paper_app.PAPER_APP`). This module is the
one part of ``sagagraph.workers`` that names the paper app: the import contracts list it.
"""

import os

from sagagraph.agents.paper_app import PAPER_APP
from sagagraph.workers.celery_app import make_celery_app

apps = [a.strip() for a in os.environ.get("SAGAGRAPH_APPS", PAPER_APP).split(",") if a.strip()]
app = make_celery_app(apps=apps)
