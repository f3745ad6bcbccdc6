"""The ``openai`` engine: a chat model behind the OpenAI API judges, reviews and summarises.

Any OpenAI-compatible server works (OpenAI, Ollama, vLLM, llama.cpp server): the engine talks
to it through langchain-openai's ``ChatOpenAI`` and asks for the pydantic models of
:mod:`sagagraph.agents.schemas` with ``with_structured_output``. The structured-output method
is configurable for servers that lack ``json_schema``.

Token thrift: the validator sends the title, the outline, the first page and the start of the
reference list, within a stated token budget (:mod:`~sagagraph.agents.validator_evidence`),
not the whole paper. The reviewer and the
summarizer send the same first message (instructions, then the paper's text), so a server's
prefix cache can serve the second from the first. (OpenAI puts the structured-output schema
before the messages, and the two schemas differ; servers such as vLLM, whose guided decoding
leaves the prompt alone, cache the shared prefix as it is.)

A summary draft of the wrong length is sent back with its word count (a bounded number of
rounds) before anything is fitted, and fitting only drops or adds whole sentences. Review points
that cite a section the paper lacks are sent back once, then dropped.

A reply that does not parse into the schema is sent back once with the error (bounded by
``repair_attempts``); when it still fails the step raises :class:`MalformedModelOutput`.
Transport failures raise :class:`ModelCallError` or :class:`StepTimeoutError`. No message
carries the API key.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import openai
from langchain_core.exceptions import ModelError, OutputParserException
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage
from langchain_core.runnables import Runnable
from pydantic import BaseModel, SecretStr, ValidationError

from sagagraph.agents.engine import NO_USAGE
from sagagraph.agents.headings import normalize_line, normalize_title
from sagagraph.agents.model_options import StructuredOutputMethod, resolve_method
from sagagraph.agents.offline_summary import ranked_sentences
from sagagraph.agents.paper import Paper, PaperTooShortError
from sagagraph.agents.review_grounding import drop_points, ungrounded_points
from sagagraph.agents.schemas import Review, Summary, ValidationReport
from sagagraph.agents.validator_evidence import DEFAULT_EVIDENCE_TOKENS, validator_evidence
from sagagraph.agents.words import count_words, fit_to_words, fit_whole_sentences
from sagagraph.checkpoints.factory import redact_url
from sagagraph.errors import (
    ConfigurationError,
    MalformedModelOutput,
    ModelCallError,
    StepError,
    StepTimeoutError,
)
from sagagraph.prompts import render_prompt
from sagagraph.redaction import redact, register_secret
from sagagraph.saga.protocol import Usage

log = logging.getLogger("sagagraph")

M = TypeVar("M", bound=BaseModel)
Check = Callable[[M], str | None]

DEFAULT_CONTEXT_CHARS = 100_000
"""Characters of paper text one request carries (about 25k tokens at ~4 characters a token)."""
DEFAULT_REPAIR_ATTEMPTS = 1
"""Times a malformed reply is sent back to the model with the error, before giving up."""
DEFAULT_REVISION_ROUNDS = 2
"""Times a summary of the wrong length is sent back with its word count, before fitting."""

_NUMBERING = re.compile(r"^(?:\d+(?:\.\d+)*|[IVXLC]+|[A-Za-z])[.)]?\s+")


def _one_line(text: str, limit: int = 240) -> str:
    line = " ".join(text.split()) or "(no message)"
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _describe_malformed(error: BaseException) -> str:
    """The first problem of a parsing error, on one line, without pydantic's doc links."""
    cause: BaseException | None = error
    while cause is not None and not isinstance(cause, ValidationError):
        cause = cause.__cause__ or cause.__context__
    error = cause or error
    if isinstance(error, ValidationError):
        problems = error.errors(include_url=False)
        first = problems[0] if problems else None
        if first is not None:
            where = ".".join(str(p) for p in first["loc"]) or "reply"
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            return _one_line(f"{where}: {first['msg']}{more}")
    text = str(error).split("For troubleshooting, visit:")[0]
    if isinstance(error, OutputParserException):
        return _one_line(text)  # already says what failed ("Invalid json output: ...")
    return _one_line(f"{type(error).__name__}: {text}")


def _normalise_heading(heading: str) -> str:
    """``III. Related-Work:`` -> ``related work``, for matching a cited heading to the outline."""
    title = normalize_title(_NUMBERING.sub("", normalize_line(heading)))
    return " ".join(re.sub(r"[^0-9a-z]+", " ", title).split())


def _usage_of(message: object) -> Usage:
    """Tokens of one reply, from its ``usage_metadata`` (zero when the server sent none)."""
    meta = getattr(message, "usage_metadata", None) or {}
    return {
        "input_tokens": int(meta.get("input_tokens", 0) or 0),
        "output_tokens": int(meta.get("output_tokens", 0) or 0),
    }


class OpenAIEngine:
    """The paper engine on an OpenAI-compatible chat model (see the module docstring)."""

    name = "openai"

    def __init__(
        self,
        chat: BaseChatModel,
        *,
        method: StructuredOutputMethod | str | None = None,
        repair_attempts: int = DEFAULT_REPAIR_ATTEMPTS,
        context_chars: int = DEFAULT_CONTEXT_CHARS,
        revision_rounds: int = DEFAULT_REVISION_ROUNDS,
        evidence_tokens: int = DEFAULT_EVIDENCE_TOKENS,
    ) -> None:
        """``chat`` is usually from :func:`sagagraph.agents.models.make_chat_model`.

        ``method`` is how structured output is requested: ``json_schema`` (OpenAI, vLLM,
        recent Ollama), ``function_calling`` (tools), or ``json_mode`` (schema in the
        prompt, for servers with neither); None reads ``SAGAGRAPH_STRUCTURED_OUTPUT``, else
        ``json_schema``. ``context_chars`` bounds the paper text in one
        request: longer papers are summarised in chunks, and the reviewer sees the start.
        ``revision_rounds`` bounds how often a summary of the wrong length is sent back;
        ``evidence_tokens`` is the validator's budget for paper evidence.
        """
        if repair_attempts < 0:
            raise ConfigurationError(f"repair_attempts must be >= 0, got {repair_attempts}")
        if context_chars < 1_000:
            raise ConfigurationError(f"context_chars must be >= 1000, got {context_chars}")
        self.chat = chat
        self.method: StructuredOutputMethod = resolve_method(method)
        self.repair_attempts = repair_attempts
        self.context_chars = context_chars
        self.revision_rounds = max(revision_rounds, 0)
        self.evidence_tokens = evidence_tokens
        self._runnables: dict[type[BaseModel], Runnable[Any, Any]] = {}

    def __repr__(self) -> str:
        return (
            f"OpenAIEngine(model={self._model_name!r}, url={self._url!r}, method={self.method!r})"
        )

    # -- the three agents -------------------------------------------------------------------

    def validate(self, paper: Paper) -> tuple[ValidationReport, Usage]:
        """Judge completeness from the outline, first page and reference evidence."""
        evidence = validator_evidence(paper, self.evidence_tokens)
        prompt = render_prompt(
            "validator",
            title=paper.title or "(untitled)",
            outline=evidence.outline,
            first_page=evidence.first_page,
            abstract=paper.abstract.strip() or "(no abstract found)",
            references=evidence.references,
            references_source=evidence.references_source,
        )
        seen = "\n".join([evidence.first_page, evidence.references, *paper.toc])
        return self._ask(
            "validator",
            ValidationReport,
            [HumanMessage(prompt)],
            check=lambda report: self._check_report(report, paper, seen),
        )

    def review(self, paper: Paper) -> tuple[Review, Usage]:
        """Strengths, weaknesses and suggestions; the paper text leads the prompt.

        Points citing a section the paper lacks are sent back once, then dropped.
        """
        messages = [self._paper_message(paper), HumanMessage(render_prompt("reviewer"))]
        review, usage = self._ask("reviewer", Review, messages)
        bad = ungrounded_points(review, paper)
        if not bad:
            return review, usage
        log.info("reviewer: %d point(s) cite sections the paper lacks; sent back", len(bad))
        headings = "; ".join(s.heading for s in paper.sections) or "(none detected)"
        retry = [
            *messages,
            AIMessage(review.model_dump_json()),
            HumanMessage(
                "These points cite sections the paper does not have: "
                + " | ".join(bad)
                + f". The paper's headings are: {headings}. Rewrite the review so that every "
                "point cites only these headings."
            ),
        ]
        revised, more = self._ask("reviewer", Review, retry)
        usage = self._sum(usage, more)
        still = ungrounded_points(revised, paper)
        kept = drop_points(revised, still) if still else revised
        if kept is None:
            raise MalformedModelOutput(
                "reviewer: every point of a list cites sections the paper does not have"
            )
        return kept, usage

    def summarize(self, paper: Paper, words: int) -> tuple[Summary, Usage]:
        """Exactly ``words`` words: the model's summary, fitted with the paper's sentences.

        Papers longer than ``context_chars`` are summarised in chunks, then the chunk
        summaries are combined. PaperTooShortError (before any model call) when the paper
        has fewer than ``words`` words.
        """
        if words < 1:
            raise ConfigurationError(f"summary length must be >= 1 word, got {words}")
        if paper.word_count < words:
            raise PaperTooShortError(
                f"{paper.source}: {paper.word_count} words, too short for a {words}-word summary"
            )
        if len(paper.text) <= self.context_chars:
            lead: list[BaseMessage] = [self._paper_message(paper)]
            draft, usage = self._summarise_text(lead, "the paper above", words)
            asked = [*lead, HumanMessage(self._summary_ask("the paper above", words))]
        else:
            draft, usage, asked = self._summarise_in_chunks(paper, words)
        draft, more = self._revise(asked, draft, words)
        usage = self._sum(usage, more)
        return Summary(text=self._fit(paper, draft, words)), usage

    def _revise(self, asked: list[BaseMessage], draft: str, words: int) -> tuple[str, Usage]:
        """Send a draft of the wrong length back with its count, at most ``revision_rounds``."""
        usage = NO_USAGE
        for _ in range(self.revision_rounds):
            got = count_words(draft)
            if got == words:
                break
            change = "Add" if got < words else "Remove"
            request = [
                *asked,
                AIMessage(draft),
                HumanMessage(
                    f"Your summary has {got} words; it must have exactly {words} words. "
                    f"{change} {abs(words - got)} words and return the whole revised summary, "
                    "in complete sentences."
                ),
            ]
            revised, used = self._ask("summarizer", Summary, request, check=self._check_summary)
            usage = self._sum(usage, used)
            draft = revised.text
        return draft, usage

    @staticmethod
    def _fit(paper: Paper, draft: str, words: int) -> str:
        """Exactly ``words`` words by whole sentences: the draft's, then the paper's best."""
        if count_words(draft) == words:
            return " ".join(draft.split())
        filler = ranked_sentences(paper, words)
        fitted = fit_whole_sentences(draft, words, filler)
        if fitted is not None:
            return fitted
        # No combination of whole sentences has the count: only then cut (a tiny paper).
        try:
            return fit_to_words(draft, words, filler=[*filler, paper.text])
        except ValueError as e:  # unreachable while the paper has enough words; kept explicit
            raise PaperTooShortError(f"summarizer: {paper.source}: {e}") from None

    # -- prompts ----------------------------------------------------------------------------

    def _paper_message(self, paper: Paper, text: str | None = None) -> SystemMessage:
        """The shared first message: instructions, then the paper (clipped to the budget)."""
        body = paper.text if text is None else text
        if len(body) > self.context_chars:
            cut = body.rfind(" ", 0, self.context_chars)
            shown = body[: cut if cut > 0 else self.context_chars]
            body = (
                f"{shown}\n\n[... the remaining {len(body) - len(shown)} characters are not shown]"
            )
        return SystemMessage(render_prompt("paper", title=paper.title or "(untitled)", paper=body))

    def _summarise_text(
        self, lead: Sequence[BaseMessage], scope: str, words: int
    ) -> tuple[str, Usage]:
        ask = self._summary_ask(scope, words)
        summary, usage = self._ask(
            "summarizer", Summary, [*lead, HumanMessage(ask)], check=self._check_summary
        )
        return summary.text, usage

    def _summarise_in_chunks(
        self, paper: Paper, words: int
    ) -> tuple[str, Usage, list[BaseMessage]]:
        """Map: summarise each chunk. Reduce: combine the summaries, in rounds when many.

        Returns the summary, the tokens spent and the last request (for revision).
        """
        chunks = paper.chunks(self.context_chars)
        usage = NO_USAGE
        per_chunk = max(50, words // 2)
        pieces: list[str] = []
        for i, chunk in enumerate(chunks, 1):
            scope = (
                f"part {i} of {len(chunks)} of the paper above (other parts are summarised apart)"
            )
            text, used = self._summarise_text([self._paper_message(paper, chunk)], scope, per_chunk)
            pieces.append(text)
            usage = self._sum(usage, used)
            log.debug("summarizer: chunk %d/%d summarised", i, len(chunks))
        while True:
            numbered = [f"Part {i}: {p}" for i, p in enumerate(pieces, 1)]
            if len(pieces) == 1 or len("\n\n".join(numbered)) <= self.context_chars:
                text, used = self._combine(paper, numbered, words)
                asked: list[BaseMessage] = [HumanMessage(self._reduce_ask(paper, numbered, words))]
                return text, self._sum(usage, used), asked
            # Too many summaries for one request: combine them in groups of two or more, so
            # each round at least halves their number and the loop ends.
            groups: list[list[str]] = [[]]
            for piece in numbered:
                group = groups[-1]
                if len(group) >= 2 and len("\n\n".join([*group, piece])) > self.context_chars:
                    groups.append([piece])
                else:
                    group.append(piece)
            combined: list[str] = []
            for group in groups:
                text, used = self._combine(paper, group, words)
                combined.append(text)
                usage = self._sum(usage, used)
            pieces = combined

    @staticmethod
    def _summary_ask(scope: str, words: int) -> str:
        return render_prompt("summarizer", scope=scope, words=words)

    @staticmethod
    def _reduce_ask(paper: Paper, summaries: list[str], words: int) -> str:
        return render_prompt(
            "summarizer_reduce",
            title=paper.title or "(untitled)",
            summaries="\n\n".join(summaries),
            words=words,
        )

    def _combine(self, paper: Paper, summaries: list[str], words: int) -> tuple[str, Usage]:
        ask = self._reduce_ask(paper, summaries, words)
        summary, usage = self._ask(
            "summarizer", Summary, [HumanMessage(ask)], check=self._check_summary
        )
        return summary.text, usage

    # -- checks the schema cannot express ---------------------------------------------------

    @staticmethod
    def _check_summary(summary: Summary) -> str | None:
        return None if summary.text.strip() else "text: the summary is empty"

    @staticmethod
    def _check_report(report: ValidationReport, paper: Paper, seen: str = "") -> str | None:
        """A report must agree with itself and cite headings the evidence shows.

        ``seen`` is the evidence text beyond the outline (first page, reference evidence,
        table of contents): a run-in "Abstract-" or an unheaded list is found there.
        """
        if report.is_valid and report.missing:
            return f"is_valid is true but missing lists {report.missing}"
        if not report.is_valid and not report.missing:
            return "is_valid is false but missing is empty: name the missing parts"
        headings = [_normalise_heading(s.heading) for s in paper.sections]
        for found in report.found:
            if found.part.strip().lower() == "abstract" and paper.abstract.strip():
                continue
            if found.part.strip().lower() == "references" and paper.references_section():
                continue  # a list without a heading is found by its entries, not its name
            claimed = _normalise_heading(found.heading)
            if claimed and claimed in _normalise_heading(seen):
                continue
            if not claimed or not any(
                claimed == h or (h and (claimed in h or h in claimed)) for h in headings
            ):
                return (
                    f"found: part {found.part!r} cites heading {found.heading!r}, "
                    "which is not in the outline"
                )
        return None

    # -- one structured call, with a bounded repair -----------------------------------------

    def _structured(self, schema: type[BaseModel]) -> Runnable[Any, Any]:
        if schema not in self._runnables:
            self._runnables[schema] = self.chat.with_structured_output(
                schema, method=self.method, include_raw=True
            )
        return self._runnables[schema]

    def _ask(
        self,
        step: str,
        schema: type[M],
        messages: list[BaseMessage],
        check: Check[M] | None = None,
    ) -> tuple[M, Usage]:
        """Ask for ``schema``; send a malformed reply back at most ``repair_attempts`` times."""
        if self.method == "json_mode":
            # json_mode constrains the reply to JSON but does not carry the schema: say it.
            # It goes last, so the shared paper prefix stays identical.
            messages = [*messages, HumanMessage(self._schema_instruction(schema))]
        usage = NO_USAGE
        attempts = 1 + self.repair_attempts
        problem = ""
        request = messages
        for attempt in range(1, attempts + 1):
            try:
                out = self._structured(schema).invoke(request)
            except (openai.APIError, ModelError) as error:
                raise self._call_error(step, error) from None
            except (ValueError, openai.OpenAIError) as error:
                # json_schema: the OpenAI client validates the reply itself and raises; the
                # reply and its token usage are lost with it.
                problem = _describe_malformed(error)
            else:
                raw = out.get("raw")
                usage = self._sum(usage, _usage_of(raw))
                parsed = out.get("parsed")
                if isinstance(parsed, schema):
                    problem = (check(parsed) if check else None) or ""
                    if not problem:
                        return parsed, usage
                elif out.get("parsing_error") is not None:
                    problem = _describe_malformed(out["parsing_error"])
                else:
                    problem = self._describe_empty(raw)
            problem = self._redact(problem)
            log.info("%s: malformed reply (attempt %d of %d): %s", step, attempt, attempts, problem)
            request = [
                *messages,
                HumanMessage(
                    f"Your previous reply was rejected: {problem}. Reply again with a "
                    f"{schema.__name__} that follows the schema and the instructions exactly."
                ),
            ]
        raise MalformedModelOutput(
            f"{step}: the model's reply is not a valid {schema.__name__} "
            f"after {attempts} attempt(s): {problem}"
        )

    @staticmethod
    def _schema_instruction(schema: type[BaseModel]) -> str:
        return (
            f"Reply with one JSON object, and nothing else, that is a valid {schema.__name__} "
            f"under this JSON schema:\n{json.dumps(schema.model_json_schema())}"
        )

    @staticmethod
    def _describe_empty(raw: object) -> str:
        if isinstance(raw, AIMessage) and raw.invalid_tool_calls:
            bad = raw.invalid_tool_calls[0]
            return _one_line(f"the tool call arguments are not JSON: {bad.get('args') or ''}")
        if isinstance(raw, AIMessage) and not raw.content and not raw.tool_calls:
            return "the reply is empty"
        return "the reply holds no structured output"

    @staticmethod
    def _sum(a: Usage, b: Usage) -> Usage:
        return {
            "input_tokens": a["input_tokens"] + b["input_tokens"],
            "output_tokens": a["output_tokens"] + b["output_tokens"],
        }

    # -- errors, without secrets ------------------------------------------------------------

    @property
    def _model_name(self) -> str:
        return str(getattr(self.chat, "model_name", None) or type(self.chat).__name__)

    @property
    def _url(self) -> str:
        url = getattr(self.chat, "openai_api_base", None) or "https://api.openai.com/v1"
        return redact_url(str(url))

    def _redact(self, text: str) -> str:
        # The client's key may not come from the environment: register it, then the one
        # redaction (sagagraph.redaction) hides it here and in every event and log line.
        secret: object = getattr(self.chat, "openai_api_key", None)
        if isinstance(secret, SecretStr):
            register_secret(secret.get_secret_value())
        return redact(text)

    def _call_error(self, step: str, error: BaseException) -> StepError:
        where = f"model {self._model_name!r} at {self._url}"
        if isinstance(error, openai.APITimeoutError):
            timeout = getattr(self.chat, "request_timeout", None)
            within = f" within {timeout}s" if isinstance(timeout, int | float) else ""
            return StepTimeoutError(f"{step}: the {where} did not answer{within}")
        if isinstance(error, openai.APIConnectionError):
            # The root cause says why ("[Errno 111] Connection refused"); the wrappers do not.
            root: BaseException = error
            for _ in range(8):  # bounded: exception chains can loop
                inner = root.__cause__ or root.__context__
                if inner is None or not str(inner):
                    break
                root = inner
            why = _one_line(str(root), 120)
            return ModelCallError(self._redact(f"{step}: cannot reach the {where}: {why}"))
        if isinstance(error, openai.AuthenticationError | openai.PermissionDeniedError):
            # The server's text may quote the key (OpenAI shows part of it): leave it out.
            return ModelCallError(
                f"{step}: the {where} refused the API key (HTTP {error.status_code}); "
                "check OPENAI_API_KEY"
            )
        if isinstance(error, openai.APIStatusError):
            body = error.body
            text = body.get("message") if isinstance(body, dict) else None
            detail = _one_line(str(text or error.message), 200)
            hint = ""
            if error.status_code == 400 and "response_format" in detail:
                hint = " (try SAGAGRAPH_STRUCTURED_OUTPUT=function_calling or json_mode)"
            return ModelCallError(
                self._redact(
                    f"{step}: the {where} answered HTTP {error.status_code}: {detail}{hint}"
                )
            )
        return ModelCallError(self._redact(f"{step}: the {where} failed: {_one_line(str(error))}"))
