"""Loading a paper: a PDF (or a .txt/.md file) read into a :class:`~sagagraph.agents.paper.Paper`.

``files`` reads the bytes and pages within the input limits, ``pages`` finds the title,
headings, running heads and notes on each page, and ``loader`` builds the paper's sections and
caches parsed papers for the agents, holding the PDF password. Judging the paper (the
validator's rules, the reviewer, the summarizer) is the agents' work, one package up; nothing
here imports it.
"""
