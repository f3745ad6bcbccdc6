"""``make demo``: the three reference scenarios of the paper saga, then the travel booking.

Runs offline, through the same ``sagagraph`` command a user types, into ``outputs/demo``. The
complete paper is a real one, ``papers/wheat_heat_stress_plos_one_2018.pdf`` (CC BY 4.0, see
``papers/SOURCES.md``); the incomplete one is a stub written for the demo.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from sagagraph.cli import main as sagagraph

HERE = Path(__file__).resolve().parent
PAPERS = HERE / "papers"
PAPER = PAPERS / "wheat_heat_stress_plos_one_2018.pdf"
DEMO = Path("outputs") / "demo"

SCENARIOS = [
    (
        "1. Success: a complete paper",
        ["run", str(PAPER), "--saga-id", "success"],
    ),
    (
        "2. Early termination: a paper with only a title, an introduction and a methodology",
        ["run", str(PAPERS / "incomplete_paper.md"), "--saga-id", "early-termination"],
    ),
    (
        "3. Compensation: a complete paper whose summarizer fails",
        [
            "run",
            str(PAPER),
            "--saga-id",
            "compensation",
            "--fail-at",
            "summarizer",
        ],
    ),
]


def run_paper_scenarios() -> list[int]:
    shutil.rmtree(DEMO, ignore_errors=True)
    DEMO.mkdir(parents=True)
    common = [
        "--db",
        f"sqlite:///{DEMO / 'sagas.sqlite'}",
        "--outputs",
        str(DEMO),
        "--llm",
        "offline",
    ]
    codes = []
    for title, args in SCENARIOS:
        print(f"\n=== {title}")
        print("$ sagagraph " + " ".join([*args, *common]), flush=True)
        code = sagagraph([*args, *common])
        print(f"(exit code {code})", flush=True)
        codes.append(code)
    files = sorted(p.relative_to(DEMO) for p in DEMO.rglob("*.txt"))
    print(f"\nfiles left under {DEMO}: {', '.join(map(str, files)) or 'none'}")
    return codes


def main() -> int:
    codes = run_paper_scenarios()
    print("\n=== A generic saga on the same engine: travel booking")
    from examples.travel_booking.run import main as travel_main

    travel_main()
    expected = [0, 5, 3]  # completed; halted by the validator; rolled back after a failure
    if codes != expected:
        print(f"demo: unexpected exit codes {codes}, expected {expected}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
