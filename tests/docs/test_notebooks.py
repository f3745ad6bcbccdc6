"""The notebooks run top to bottom offline, and their saved copies are executed and clean.

Each notebook runs in a fresh ``python3`` kernel through ``notebooks/run_all.py`` (the same
function that saves them): no API key, no model server, HTTP proxies pointed at a closed
port. The pictures they draw come from :mod:`sagagraph.plotting`, tested at the end.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from sagagraph.errors import ConfigurationError

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbclient")
pytest.importorskip("matplotlib")

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS_DIR = ROOT / "notebooks"
EXPECTED = [
    "01_orchestration.ipynb",
    "02_choreography.ipynb",
    "03_routing.ipynb",
    "04_crash_and_recovery.ipynb",
    "05_your_own_saga.ipynb",
    "06_agents_with_tools.ipynb",
    "07_three_patterns.ipynb",
    "08_router_risk.ipynb",
    "09_isolation.ipynb",
]


def load_runner() -> ModuleType:
    """``notebooks/run_all.py`` as a module (the folder is not a package)."""
    spec = importlib.util.spec_from_file_location("notebooks_run_all", NOTEBOOKS_DIR / "run_all.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def problems(notebook: Any) -> list[str]:
    """Error outputs and anything printed to stderr, one line each."""
    found = []
    for index, cell in enumerate(notebook.cells):
        for output in cell.get("outputs", []):
            if output.output_type == "error":
                found.append(f"cell {index}: {output.ename}: {output.evalue}")
            elif output.output_type == "stream" and output.name == "stderr":
                found.append(f"cell {index}: stderr: {output.text.strip()[:300]}")
    return found


def pictures(notebook: Any) -> int:
    return sum(
        "image/png" in output.get("data", {})
        for cell in notebook.cells
        for output in cell.get("outputs", [])
    )


def test_every_notebook_is_there() -> None:
    assert [p.name for p in load_runner().notebooks()] == EXPECTED


@pytest.mark.slow
@pytest.mark.parametrize("name", EXPECTED)
def test_notebook_runs_offline_top_to_bottom(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    runner = load_runner()
    for variable in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "SAGAGRAPH_LLM"):
        monkeypatch.delenv(variable, raising=False)
    before = sorted(p.name for p in NOTEBOOKS_DIR.iterdir())

    executed = runner.execute_notebook(NOTEBOOKS_DIR / name)  # raises on a failing cell

    assert problems(executed) == []
    assert pictures(executed) >= 1
    # Outputs and databases go to temporary folders: nothing is left beside the notebooks.
    assert sorted(p.name for p in NOTEBOOKS_DIR.iterdir()) == before


def test_the_kernel_environment_is_offline() -> None:
    env = load_runner().offline_env(
        {"OPENAI_API_KEY": "sk-secret", "SAGAGRAPH_LLM": "openai", "PATH": "/usr/bin"}
    )
    assert "OPENAI_API_KEY" not in env and "SAGAGRAPH_LLM" not in env
    assert env["PATH"] == "/usr/bin"
    assert env["HTTPS_PROXY"].startswith("http://127.0.0.1:")


@pytest.mark.parametrize("name", EXPECTED)
def test_saved_copy_was_executed_in_order_and_is_clean(name: str) -> None:
    notebook = nbformat.read(NOTEBOOKS_DIR / name, as_version=4)
    counts = [cell.execution_count for cell in notebook.cells if cell.cell_type == "code"]
    # 1, 2, 3...: one kernel ran every cell, top to bottom, once (notebooks/run_all.py).
    assert counts == list(range(1, len(counts) + 1))
    assert problems(notebook) == []
    assert pictures(notebook) >= 1


# The pictures the notebooks draw: sagagraph.plotting.


@pytest.fixture
def pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")  # no display in tests
    import matplotlib.pyplot as plt

    yield plt
    plt.close("all")


def test_graph_layout_puts_steps_in_a_row_and_undoing_below() -> None:
    from sagagraph.plotting import graph_layout

    names = ["__start__", "a", "b", "c", "compensate", "escalate", "supervisor", "__end__"]
    pos = graph_layout(names)
    row = [pos[n] for n in ("__start__", "a", "b", "c", "__end__")]
    assert [y for _, y in row] == [0.0] * 5
    assert [x for x, _ in row] == sorted(x for x, _ in row)
    assert pos["supervisor"][1] > 0 > pos["compensate"][1] > pos["escalate"][1]


def test_an_edge_that_would_cross_a_node_bends_around_it() -> None:
    from sagagraph.plotting.saga_graph import edge_bend, graph_layout

    pos = graph_layout(["__start__", "a", "b", "c", "compensate", "supervisor", "__end__"])
    assert pos["supervisor"][0] == pos["b"][0]  # the straight line runs through b
    assert edge_bend("supervisor", "compensate", pos) != 0.0
    assert edge_bend("a", "b", pos) == 0.0
    assert edge_bend("b", "supervisor", pos, paired=True) > 0.0


def test_records_table_as_text_and_html() -> None:
    from sagagraph.plotting import records_table

    table = records_table(
        [{"step": "a<b>", "done": ["x", "y"], "note": None}, {"step": "c", "note": "z" * 20}],
        ["step", "done", "note"],
        max_width=10,
    )
    assert table.rows == (("a<b>", "x, y", ""), ("c", "", "z" * 9 + "…"))
    assert str(table).splitlines()[0].split() == ["step", "done", "note"]
    assert "<td>a&lt;b&gt;</td>" in table._repr_html_()


def test_timeline_draws_one_bar_per_execute_and_compensate(pyplot: Any) -> None:
    from sagagraph.plotting import plot_saga_timeline
    from sagagraph.saga.view import make_event

    events = [
        make_event("a", "execute", "ok"),
        make_event("b", "execute", "error", 1, "boom"),
        make_event("b", "compensate", "ok"),
        make_event("a", "compensate", "retry"),
        make_event("a", "compensate", "ok", 2),
        make_event("saga", "finish", "ok"),
    ]
    for axis in ("order", "time"):
        figure = plot_saga_timeline(
            {"saga_id": "s1", "status": "rolled_back", "events": events}, x=axis
        )
        ax = figure.axes[0]
        assert len(ax.collections) == 5  # the finish is a mark, not a bar
        assert [t.get_text() for t in ax.get_yticklabels()] == ["saga", "b", "a"]
        assert ax.get_title(loc="left") == "s1: rolled_back"


def test_graph_drawing_shows_every_node(pyplot: Any, tmp_path: Path) -> None:
    from sagagraph import build_saga_graph
    from sagagraph.agents.paper_saga import paper_saga_definition
    from sagagraph.plotting import draw_choreography, draw_saga_graph

    definition = paper_saga_definition(outputs_dir=tmp_path)
    figure = draw_saga_graph(build_saga_graph(definition))
    labels = {t.get_text() for t in figure.axes[0].texts}
    assert {"START", "validator", "reviewer", "summarizer", "compensate", "END"} <= labels
    events = {t.get_text() for t in draw_choreography(definition).axes[0].texts}
    assert {"paper_submitted", "validated", "summary_compensated"} <= events


def test_board_drawing_shows_one_box_per_version(pyplot: Any) -> None:
    from sagagraph.blackboard.board import entry
    from sagagraph.plotting import BOARD_COLOURS, plot_board

    board: list[Any] = []
    for topic, status in [("validator", "posted"), ("reviewer", "posted"), ("reviewer", "refined")]:
        board.append(entry(board, topic, topic, status, note=""))  # type: ignore[arg-type]
    board.append(entry(board, "reviewer", "reviewer", "withdrawn", note="retracted"))
    figure = plot_board({"saga_id": "b1", "status": "rolled_back", "board": board})
    ax = figure.axes[0]
    boxes = [t for t in ax.texts if t.get_bbox_patch() is not None]
    assert [t.get_text() for t in boxes] == [
        "v1 posted\nby validator",
        "v1 posted\nby reviewer",
        "v2 refined\nby reviewer",
        "v3 withdrawn\nby reviewer",
    ]
    assert boxes[3].get_bbox_patch().get_facecolor()[:3] == pyplot.matplotlib.colors.to_rgb(
        BOARD_COLOURS["withdrawn"]
    )
    # Topics top to bottom in the order they first appeared.
    labels = [t.get_text() for t in ax.get_yticklabels()]
    ticks = sorted(zip(ax.get_yticks(), labels, strict=True))
    assert [name for _, name in reversed(ticks)] == ["validator", "reviewer"]
    assert ax.get_title() == "board of b1: rolled_back"
    empty = plot_board([]).axes[0]
    assert [t.get_text() for t in empty.texts] == ["nothing was posted"]


def test_drawing_without_matplotlib_says_which_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from sagagraph.plotting import plot_saga_timeline

    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)  # import now fails
    with pytest.raises(ConfigurationError, match=r"make extra EXTRA=notebooks"):
        plot_saga_timeline([])


def test_timeline_draws_tool_calls_inside_their_step(pyplot: Any) -> None:
    from sagagraph.plotting import plot_saga_timeline
    from sagagraph.saga.view import make_event

    def tool_event(step: str, action: str, tool: str, outcome: str = "ok") -> Any:
        return {**make_event(step, action, outcome), "tool": tool, "key": f"s1:{step}:call-1"}

    events = [
        tool_event("flight", "tool_call", "book_flight"),
        make_event("flight", "execute", "ok"),
        tool_event("billing", "tool_call", "charge_wallet", "error"),
        make_event("billing", "execute", "error"),
        tool_event("flight", "tool_undo", "book_flight"),
        make_event("flight", "compensate", "ok"),
    ]
    figure = plot_saga_timeline({"saga_id": "s1", "status": "rolled_back", "events": events})
    ax = figure.axes[0]

    assert len(ax.collections) == 6  # three step bars, three tool bars
    assert {t.get_text() for t in ax.texts} == {"book_flight", "charge_wallet"}
    tool_bar, execute_bar = ax.collections[0], ax.collections[1]  # drawn in event order
    # The tool bar lies inside the flight's execute bar.
    outer = execute_bar.get_paths()[0].get_extents()
    inner = tool_bar.get_paths()[0].get_extents()
    assert outer.x0 <= inner.x0 and inner.x1 <= outer.x1
    assert outer.y0 <= inner.y0 and inner.y1 <= outer.y1
    labels = {t.get_text() for t in ax.get_legend().get_texts()}
    assert {"tool call", "tool undo"} <= labels
