"""Loading a paper: a PDF (or a .txt/.md file) read into a :class:`~sagagraph.agents.paper.Paper`.

``files`` reads the bytes and pages within the input limits (``input_limits``), ``layout``
and ``page_cleaning`` find headings, running heads and notes on each page, ``parsing`` builds
the paper's sections, and ``loader`` caches parsed papers for the agents and holds the PDF
password. Judging the paper (the validator's rules, the reviewer, the summarizer) is the
agents' work, one package up; nothing here imports it.
"""
