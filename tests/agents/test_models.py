"""Engine configuration: flags first, then the environment; the API key never shows."""

from __future__ import annotations

import pytest
from langchain_openai import ChatOpenAI

from sagagraph.agents.engine import resolve_method
from sagagraph.agents.models import (
    DEFAULT_MODEL,
    make_chat_model,
    make_engine,
    resolve_llm,
)
from sagagraph.agents.openai_engine import OpenAIEngine
from sagagraph.errors import ConfigurationError

KEY = "sk-models-SECRET-0b7d2e"
ENV = (
    "SAGAGRAPH_LLM",
    "SAGAGRAPH_MODEL",
    "SAGAGRAPH_STRUCTURED_OUTPUT",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "SAGAGRAPH_MODEL_TIMEOUT",
    "SAGAGRAPH_CONTEXT_TOKENS",
)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV:
        monkeypatch.delenv(name, raising=False)


def test_offline_without_a_key_and_openai_with_one(monkeypatch: pytest.MonkeyPatch) -> None:
    assert resolve_llm() == "offline"
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    assert resolve_llm() == "openai"


def test_the_flag_beats_the_environment_which_beats_the_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("SAGAGRAPH_LLM", "offline")
    assert resolve_llm() == "offline"
    assert resolve_llm("openai") == "openai"
    assert resolve_llm(" OpenAI ") == "openai"


@pytest.mark.parametrize(
    ("flag", "env", "named"),
    [("gpt", None, "--llm='gpt'"), (None, "anthropic", "SAGAGRAPH_LLM='anthropic'")],
)
def test_a_bad_choice_names_where_it_came_from(
    monkeypatch: pytest.MonkeyPatch, flag: str | None, env: str | None, named: str
) -> None:
    if env is not None:
        monkeypatch.setenv("SAGAGRAPH_LLM", env)
    with pytest.raises(ConfigurationError, match="expected one of offline, openai") as err:
        resolve_llm(flag)
    assert str(err.value).startswith(named)


def test_structured_output_method_from_argument_or_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert resolve_method() == "json_schema"
    monkeypatch.setenv("SAGAGRAPH_STRUCTURED_OUTPUT", "function_calling")
    assert resolve_method() == "function_calling"
    assert resolve_method("json_mode") == "json_mode"
    monkeypatch.setenv("SAGAGRAPH_STRUCTURED_OUTPUT", "xml")
    with pytest.raises(ConfigurationError, match="SAGAGRAPH_STRUCTURED_OUTPUT='xml'"):
        resolve_method()


def test_the_engine_reads_the_method_from_the_environment_unless_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    chat = make_chat_model(api_key=KEY)
    assert OpenAIEngine(chat).method == "json_schema"
    monkeypatch.setenv("SAGAGRAPH_STRUCTURED_OUTPUT", "function_calling")
    assert OpenAIEngine(chat).method == "function_calling"
    assert OpenAIEngine(chat, method="json_mode").method == "json_mode"
    with pytest.raises(ConfigurationError, match="method='xml'"):
        OpenAIEngine(chat, method="xml")


def test_chat_model_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:11434/v1")
    chat = make_chat_model()
    assert chat.model_name == DEFAULT_MODEL
    assert chat.openai_api_base == "http://127.0.0.1:11434/v1"
    assert chat.openai_api_key is not None and chat.openai_api_key.get_secret_value() == KEY
    monkeypatch.setenv("SAGAGRAPH_MODEL", "llama3.1:8b")
    assert make_chat_model().model_name == "llama3.1:8b"
    assert make_chat_model("qwen2.5").model_name == "qwen2.5"


def test_arguments_beat_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
    chat = make_chat_model(base_url="http://127.0.0.1:2/v1", api_key=KEY, timeout=5, max_retries=0)
    assert chat.openai_api_base == "http://127.0.0.1:2/v1"
    assert chat.openai_api_key is not None and chat.openai_api_key.get_secret_value() == KEY
    assert chat.request_timeout == 5 and chat.max_retries == 0


def test_a_local_model_gets_its_timeout_and_context_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ollama on a CPU needs minutes a request, and runs with the window it was started with."""
    monkeypatch.setenv("OPENAI_API_KEY", "ollama")
    monkeypatch.setenv("SAGAGRAPH_MODEL", "llama3.1:8b")
    engine = make_engine("openai")
    assert isinstance(engine, OpenAIEngine)
    assert engine.chat.request_timeout == 120 and engine.context_tokens == 8_192
    monkeypatch.setenv("SAGAGRAPH_MODEL_TIMEOUT", "900")
    monkeypatch.setenv("SAGAGRAPH_CONTEXT_TOKENS", "16384")
    engine = make_engine("openai")
    assert isinstance(engine, OpenAIEngine)
    assert engine.chat.request_timeout == 900 and engine.context_tokens == 16_384
    assert make_chat_model(timeout=5).request_timeout == 5  # an argument beats the environment
    monkeypatch.setenv("SAGAGRAPH_MODEL_TIMEOUT", "soon")
    with pytest.raises(ConfigurationError, match="SAGAGRAPH_MODEL_TIMEOUT='soon'"):
        make_chat_model()


def test_no_key_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="needs OPENAI_API_KEY"):
        make_chat_model()
    with pytest.raises(ConfigurationError, match="needs OPENAI_API_KEY"):
        make_engine("openai")


def test_make_engine_builds_the_openai_engine_without_showing_the_key(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    engine = make_engine(model="gpt-test", base_url="http://127.0.0.1:9/v1", method="json_mode")
    assert isinstance(engine, OpenAIEngine)
    assert engine.name == "openai" and engine.method == "json_mode"
    assert isinstance(engine.chat, ChatOpenAI) and engine.chat.model_name == "gpt-test"
    for text in (repr(engine), str(engine), repr(engine.chat), str(vars(engine))):
        assert KEY not in text


def test_a_password_in_the_base_url_is_hidden_in_the_engine_repr() -> None:
    engine = make_engine("openai", base_url="http://user:hunter2@127.0.0.1:9/v1", api_key=KEY)
    assert "hunter2" not in repr(engine) and "user:***@" in repr(engine)


def test_make_engine_offline() -> None:
    engine = make_engine()
    assert engine.name == "offline"
    assert make_engine("offline").name == "offline"
