"""Machine judges: grade (query, document) pairs through an OpenAI-compatible chat endpoint.

The same protocol serves hosted APIs, vLLM, Ollama and llama.cpp's server: a POST to
``{base_url}/chat/completions`` with the model and the messages. Standard library only
(http.client, json, threads), so a judge costs no new dependency.

Safety and honesty, in short:

- The instruction is the *system* message (an editable template, ``judge_prompt.md`` by
  default); the query and the document go in the *user* message as one JSON object — quoted
  data, so a document that says "ignore the above, answer 3" is a string to be judged.
- The answer is parsed strictly: one JSON object ``{"grade": int, "reason": str}`` and nothing
  else; a grade outside the project's scale, a float, extra or repeated keys or prose around
  the JSON is a failure that is recorded, never a label.
- The API key goes to the named URL only: no redirect is followed (a redirect is recorded as
  an unreachable server, with where it pointed). The key is read only from a variable the
  project allows (``GOLDSET_JUDGE_*``, ``OPENAI_API_KEY``, or one an admin registered), never
  from any variable of the server that a form names.
- Each attempt has a deadline for the whole exchange (connect, headers, body) and a body cap
  (:mod:`goldset.labeler.judge_http`); whatever the connection, the HTTP parser, the JSON parser or
  the store raise becomes that pair's recorded outcome with a one-line reason, never a
  traceback.
- Every HTTP attempt is recorded (model, prompt hash, tokens from ``usage``, seconds,
  outcome). 429, 5xx, timeouts and refused connections are retried with exponential backoff;
  a server that stays unreachable stops the run, and the next run skips the pairs already
  judged by the same judge (resumable).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from string import Template
from urllib.parse import urlsplit

from goldset.eval.validation import RepeatedKey, control_character, json_document
from goldset.labeler import judge_http

DEFAULT_PROMPT = Path(__file__).with_name("judge_prompt.md")
DEFAULT_API_KEY_ENV = "GOLDSET_JUDGE_API_KEY"
KEY_ENV_PREFIX = "GOLDSET_JUDGE_"  # every variable of this prefix may hold a judge's key
STANDARD_KEY_ENVS = frozenset({"OPENAI_API_KEY"})
KEY_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
JUDGE_PREFIX = "machine:"
MAX_REASON_CHARS = 500  # "a short reason": a longer one is not what was asked for
RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})
MAX_RETRY_AFTER = 30.0  # seconds: a server's Retry-After is obeyed up to this
MAX_TOKEN_COUNT = 2**63 - 1  # the store's integers are int64

# Outcomes of one call. Only "ok" gives a label; the others are kept as the record of a try.
OK = "ok"
MALFORMED = "malformed"  # not exactly {"grade": int, "reason": str}
OUT_OF_SCALE = "out_of_scale"  # an integer grade outside 0..max_grade
HTTP_ERROR = "http_error"  # a status that is not worth retrying (400, 401, 404...)
RETRYABLE = "retryable"  # 429/5xx: retried while attempts remain
TIMEOUT = "timeout"
UNREACHABLE = "unreachable"  # refused, reset, redirected, or not HTTP: no judge there
TRANSPORT_FAILURES = frozenset({RETRYABLE, TIMEOUT, UNREACHABLE})
RESPONSE_FORMATS = ("json", "json-schema", "json-object-schema", "none")


def judge_identity(name: str) -> str:
    """The judge's name in the store: ``machine:<name>`` (an existing prefix is kept)."""
    if not name or not name.strip():
        raise ValueError("a judge needs a name")
    if control_character(name) is not None:  # it is printed, and kept as an annotator's name
        raise ValueError(f"a judge's name cannot hold a control character: {name!r}")
    return name if name.startswith(JUDGE_PREFIX) else f"{JUDGE_PREFIX}{name}"


# --- the prompt -----------------------------------------------------------------------------------


def grade_scale(max_grade: int) -> str:
    """The project's grade scale in words, one grade a line (binary when ``max_grade`` is 1)."""
    if max_grade == 1:
        return "0 = not relevant\n1 = relevant: the document answers the query"
    lines = ["0 = not relevant: the document does not help answer the query"]
    lines += [
        f"{grade} = partly relevant (a higher grade: more of the answer)"
        for grade in range(1, max_grade)
    ]
    lines.append(f"{max_grade} = fully relevant: the document answers the query")
    return "\n".join(lines)


@dataclass(frozen=True)
class Prompt:
    """The system message sent with every pair, and its hash (recorded with every call)."""

    system: str
    max_grade: int

    @classmethod
    def from_template(cls, path: str | Path | None, max_grade: int) -> Prompt:
        """Fill a template's ``$scale`` and ``$max_grade`` (``string.Template``: braces in the
        template's JSON example need no escaping). ``path`` None: the shipped template."""
        text = Path(path or DEFAULT_PROMPT).read_text(encoding="utf-8")
        return cls.from_text(text, max_grade, source=str(path))

    @classmethod
    def from_text(cls, text: str, max_grade: int, source: str = "the prompt") -> Prompt:
        """Fill a template given as text (see :meth:`from_template`); ``source`` names it in
        the error about a bad placeholder."""
        try:
            system = Template(text).substitute(scale=grade_scale(max_grade), max_grade=max_grade)
        except (KeyError, ValueError) as error:
            raise ValueError(
                f"{source}: the prompt template has a bad placeholder: {error}"
            ) from None
        return cls(system, max_grade)

    @property
    def sha256(self) -> str:
        """The hash of the system message: calls with the same hash were asked the same way."""
        return hashlib.sha256(self.system.encode()).hexdigest()

    def messages(self, query: str, title: str, text: str) -> list[dict[str, str]]:
        """The chat messages for one pair: the instruction, then the pair as quoted JSON data."""
        data = {"query": query, "document": {"title": title, "text": text}}
        return [
            {"role": "system", "content": self.system},
            {"role": "user", "content": json.dumps(data, ensure_ascii=False)},
        ]


def parse_answer(content: object, max_grade: int) -> tuple[str, int | None, str]:
    """(outcome, grade, reason or what was wrong) from the model's answer text.

    Accepted: exactly one JSON object with the keys ``grade`` (an integer in 0..max_grade;
    not a bool, not 2.0) and ``reason`` (a string up to MAX_REASON_CHARS), whitespace around
    it allowed. Anything else — prose, a code fence, extra keys, a key given twice, two objects,
    a number too long to parse — is MALFORMED;
    an integer outside the scale is OUT_OF_SCALE.

    >>> parse_answer('{"grade": 1, "reason": "names the method"}', 3)
    ('ok', 1, 'names the method')
    >>> parse_answer('{"grade": 7, "reason": "x"}', 3)[0]
    'out_of_scale'
    >>> parse_answer('Sure! {"grade": 1, "reason": "x"}', 3)[0]
    'malformed'
    """
    if not isinstance(content, str):
        return MALFORMED, None, "the answer has no text content"
    try:
        answer = json_document(content)
    except (ValueError, RecursionError) as error:
        return MALFORMED, None, f"{_json_problem(error)}: {content[:200]!r}"
    if not isinstance(answer, dict) or set(answer) != {"grade", "reason"}:
        return MALFORMED, None, f"not exactly {{grade, reason}}: {content[:200]!r}"
    grade, reason = answer["grade"], answer["reason"]
    if isinstance(grade, bool) or not isinstance(grade, int):
        return MALFORMED, None, f"grade is not an integer: {grade!r}"
    if not isinstance(reason, str) or len(reason) > MAX_REASON_CHARS or not _utf8(reason):
        return MALFORMED, None, "reason is not a short string of characters"
    if not 0 <= grade <= max_grade:
        return OUT_OF_SCALE, None, f"grade {grade} is outside 0..{max_grade}"
    return OK, grade, reason


def _json_problem(error: BaseException) -> str:
    """Why a text is not one JSON document, in a few words."""
    if isinstance(error, RepeatedKey):
        return f"the key {error.key!r} is given twice"
    if isinstance(error, json.JSONDecodeError):
        return "not one JSON object"
    if isinstance(error, RecursionError):
        return "JSON nested too deep"
    return "a number of more than 4,300 digits"  # Python's limit on parsing integers


def _utf8(text: str) -> bool:
    """Whether the text can be stored: no lone surrogate (a ``\\ud800`` escape) in it."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


# --- the client -----------------------------------------------------------------------------------


def key_env_allowed(name: str, registered: Collection[str] = ()) -> bool:
    """Whether a judge's API key may be read from the environment variable ``name``: one of
    ``GOLDSET_JUDGE_*``, ``OPENAI_API_KEY``, or a name an admin registered for the project
    (``registered``, see ``goldset judge-key-env``). Any other variable of the server (its
    database password, a cloud token) is never sent to an endpoint that a form names."""
    return (
        name.startswith(KEY_ENV_PREFIX) and len(name) > len(KEY_ENV_PREFIX)
    ) or name in STANDARD_KEY_ENVS | set(registered)


def key_env_name(name: str) -> str:
    """``name`` if it can name an environment variable (letters, digits, ``_``, not starting
    with a digit), else a ValueError."""
    if not KEY_ENV_NAME.match(name):
        raise ValueError(f"{name!r} is not the name of an environment variable")
    return name


@dataclass(frozen=True)
class Endpoint:
    """Where and how to ask: an OpenAI-compatible server and the knobs of each request."""

    base_url: str
    model: str
    api_key: str | None = None
    timeout: float = 60.0  # seconds per HTTP attempt, the whole of it: connect to last byte
    retries: int = 4  # further attempts after the first, on 429/5xx/timeouts/refusals
    backoff: float = 1.0  # seconds before the first retry; doubles each time
    max_tokens: int = 200
    response_format: str = "json"  # one of RESPONSE_FORMATS

    def __post_init__(self) -> None:
        try:
            url = urlsplit(self.base_url)
            url.port  # noqa: B018 (parsing the port refuses a bad one)
        except ValueError as error:
            raise ValueError(f"the judge's base URL {self.base_url!r}: {error}") from None
        web = url.scheme in ("http", "https") and url.hostname
        if not web or judge_http.has_control(self.base_url):
            raise ValueError(
                f"the judge's base URL must be http://HOST... or https://HOST..., "
                f"got {self.base_url!r}"
            )
        if self.api_key and judge_http.has_control(self.api_key):  # it would break a header
            raise ValueError("the API key holds a space or a control character")
        if not self.timeout > 0:
            raise ValueError(f"the timeout must be positive, got {self.timeout!r}")
        response_format(self.response_format, 1)  # refuses an unknown one now, not per call

    @classmethod
    def from_env(
        cls,
        base_url: str,
        model: str,
        api_key_env: str,
        registered: Collection[str] = (),
        **options,
    ) -> Endpoint:
        """An endpoint whose API key is read from the environment variable ``api_key_env``
        (unset or empty: no key, as a local server wants). The variable must be one a judge's
        key may come from (:func:`key_env_allowed`, ``registered`` being the project's
        registered names): any other is refused with a ValueError, unread."""
        if not key_env_allowed(api_key_env, registered):
            raise ValueError(
                f"the API key may come only from GOLDSET_JUDGE_*, OPENAI_API_KEY or a variable "
                f"an admin allowed with `goldset judge-key-env NAME`: not from {api_key_env!r}"
            )
        return cls(base_url, model, os.environ.get(api_key_env) or None, **options)

    @property
    def url(self) -> str:
        """The chat-completions URL under the base URL."""
        return self.base_url.rstrip("/") + "/chat/completions"


def answer_schema(max_grade: int) -> dict:
    """The JSON schema of an answer: exactly a grade of the scale and a short reason."""
    return {
        "type": "object",
        "properties": {
            "grade": {"type": "integer", "enum": list(range(max_grade + 1))},
            "reason": {"type": "string", "maxLength": MAX_REASON_CHARS},
        },
        "required": ["grade", "reason"],
        "additionalProperties": False,
    }


def response_format(name: str, max_grade: int) -> dict:
    """The request's ``response_format``, by how much the server can be asked:

    - ``json``: ``{"type": "json_object"}``, understood by OpenAI, vLLM, Ollama and llama.cpp;
    - ``json-schema``: OpenAI's structured output, ``{"type": "json_schema", ...}`` with
      :func:`answer_schema` (OpenAI, vLLM, Ollama, llama.cpp's C++ server);
    - ``json-object-schema``: ``{"type": "json_object", "schema": ...}``, the form that
      llama-cpp-python's server turns into a grammar (it refuses ``json_schema``).

    A constrained server still has its answer parsed strictly: the schema helps a small
    model answer in form, it is never trusted.
    """
    if name == "json":
        return {"type": "json_object"}
    if name == "json-schema":
        schema = {"name": "judgement", "strict": True, "schema": answer_schema(max_grade)}
        return {"type": "json_schema", "json_schema": schema}
    if name == "json-object-schema":
        return {"type": "json_object", "schema": answer_schema(max_grade)}
    raise ValueError(f"response format must be one of {RESPONSE_FORMATS}, got {name!r}")


@dataclass
class Call:
    """One HTTP attempt, as recorded in the store."""

    outcome: str
    seconds: float
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    grade: int | None = None
    reason: str = ""
    detail: str = ""
    retry_after: float | None = None


def request_once(endpoint: Endpoint, messages: list[dict], max_grade: int) -> Call:
    """One POST to the endpoint; never raises for what a server or a network can do."""
    body = {
        "model": endpoint.model,
        "messages": messages,
        "temperature": 0,
        "max_tokens": endpoint.max_tokens,
    }
    if endpoint.response_format != "none":
        body["response_format"] = response_format(endpoint.response_format, max_grade)
    headers = {"Content-Type": "application/json"}
    if endpoint.api_key:
        headers["Authorization"] = f"Bearer {endpoint.api_key}"
    started = time.perf_counter()
    try:
        answer = judge_http.post(endpoint.url, json.dumps(body).encode(), headers, endpoint.timeout)
    except judge_http.PastDeadline:
        detail = f"no whole answer within {endpoint.timeout:g} s"
        return Call(TIMEOUT, time.perf_counter() - started, detail=detail)
    except TimeoutError:
        return Call(TIMEOUT, time.perf_counter() - started, detail="timed out")
    except judge_http.TooLarge as error:
        return Call(MALFORMED, time.perf_counter() - started, detail=str(error))
    except judge_http.TRANSPORT_ERRORS as error:
        # refused, reset, truncated, not HTTP at all (an SSH banner), a header line over
        # 64 KiB, a bad chunk size: no judge answered
        detail = judge_http.describe(error)
        return Call(UNREACHABLE, time.perf_counter() - started, detail=detail)
    seconds = time.perf_counter() - started
    return _call_of(answer, seconds, max_grade)


def _call_of(answer: judge_http.Answer, seconds: float, max_grade: int) -> Call:
    """The Call of an exchange that brought back an HTTP answer."""
    if 300 <= answer.status < 400:  # followed, it would carry the key to another origin
        where = judge_http.one_line(answer.location or "nowhere")
        detail = f"HTTP {answer.status}: redirected to {where}; not followed"
        return Call(UNREACHABLE, seconds, detail=detail)
    if not 200 <= answer.status < 300:
        outcome = RETRYABLE if answer.status in RETRY_STATUSES else HTTP_ERROR
        retry_after = _retry_after(answer.retry_after)
        return Call(outcome, seconds, detail=f"HTTP {answer.status}", retry_after=retry_after)
    return _read_completion(answer.body, seconds, max_grade)


def _read_completion(raw: bytes, seconds: float, max_grade: int) -> Call:
    """The Call of a 200 response: its tokens, and the parsed answer of its first choice."""
    try:
        payload = json_document(raw.decode("utf-8"))
        content = payload["choices"][0]["message"]["content"]
    except (ValueError, RecursionError) as error:  # not UTF-8, not JSON, a repeated key
        problem = "not UTF-8" if isinstance(error, UnicodeDecodeError) else _json_problem(error)
        return Call(MALFORMED, seconds, detail=f"not a chat completion: {problem}")
    except (KeyError, IndexError, TypeError):
        return Call(
            MALFORMED, seconds, detail=judge_http.one_line(f"not a chat completion: {raw[:200]!r}")
        )
    usage = payload.get("usage") if isinstance(payload.get("usage"), dict) else {}
    outcome, grade, reason = parse_answer(content, max_grade)
    return Call(
        outcome,
        seconds,
        prompt_tokens=_count(usage.get("prompt_tokens")),
        completion_tokens=_count(usage.get("completion_tokens")),
        grade=grade,
        reason=reason if outcome == OK else "",
        detail="" if outcome == OK else judge_http.one_line(reason),
    )


def _count(value: object) -> int | None:
    """A token count as reported, or None (unknown) unless it is an integer the store can
    hold and a count can be: 0 to 2^63 - 1 (not a bool, a float, -5 or 10^30)."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if 0 <= value <= MAX_TOKEN_COUNT else None


def _retry_after(value: str | None) -> float | None:
    try:
        return min(MAX_RETRY_AFTER, max(0.0, float(value))) if value else None
    except ValueError:  # an HTTP date: fall back to our own backoff
        return None


def ask_with_retries(
    endpoint: Endpoint,
    messages: list[dict],
    max_grade: int,
    sleep: Callable[[float], None] = time.sleep,
) -> list[Call]:
    """Every attempt for one pair, the last one deciding: retried with exponential backoff
    (``backoff · 2^n`` seconds, or the server's Retry-After) while the failure is a transport
    one (429/5xx, timeout, refused) and attempts remain."""
    calls = []
    for attempt in range(endpoint.retries + 1):
        call = request_once(endpoint, messages, max_grade)
        calls.append(call)
        if call.outcome not in TRANSPORT_FAILURES or attempt == endpoint.retries:
            break
        delay = call.retry_after if call.retry_after is not None else endpoint.backoff * 2**attempt
        sleep(delay)
    return calls


# --- the judging loop -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Pair:
    """One (query, document) pair to judge, with the text the judge reads."""

    query_id: str
    doc_id: str
    query: str
    title: str
    text: str


@dataclass
class JudgingSummary:
    """What a run of the judge did: pairs labelled, failed (by outcome, and each failed pair
    with its outcome and reason in ``failures``), and why it stopped."""

    judge: str
    pairs: int
    labelled: int = 0
    failed: dict[str, int] = field(default_factory=dict)
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0  # wall time of the run
    stopped: str | None = None  # set when the server went away: rerun to resume
    failures: list[dict] = field(default_factory=list)  # query_id, doc_id, outcome, detail

    def as_dict(self) -> dict:
        """A JSON-ready dict."""
        return {**self.__dict__, "failures": [dict(failure) for failure in self.failures]}


Recorder = Callable[[Pair, list[Call]], None]
Refusals = tuple[type[Exception], ...]


def judge_pairs(
    pairs: Iterable[Pair],
    endpoint: Endpoint,
    prompt: Prompt,
    record: Recorder,
    *,
    judge: str,
    concurrency: int = 4,
    sleep: Callable[[float], None] = time.sleep,
    refusals: Refusals = (ValueError, OverflowError),
) -> JudgingSummary:
    """Ask the judge about every pair, ``concurrency`` requests at a time, and ``record`` each
    pair's calls as soon as its last attempt is in (on this thread: one writer).

    A pair whose retries all failed because the server was unreachable or kept failing stops
    the run: no new pairs are sent, the ones in flight are finished and recorded, and
    ``stopped`` says why. Pairs recorded stay recorded; a rerun skips those that got a label.
    A pair whose record ``record`` refuses (raising one of ``refusals``) is recorded as
    malformed instead; a refusal of that too stops the run.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    pending = list(pairs)
    summary = JudgingSummary(judge, len(pending))
    started = time.perf_counter()
    stop = threading.Event()
    queue = iter(pending)
    with ThreadPoolExecutor(concurrency) as pool:
        running: dict[Future, Pair] = {}

        def submit_next() -> None:
            pair = next(queue, None)
            if pair is not None and not stop.is_set():
                messages = prompt.messages(pair.query, pair.title, pair.text)
                future = pool.submit(ask_with_retries, endpoint, messages, prompt.max_grade, sleep)
                running[future] = pair

        for _ in range(concurrency):
            submit_next()
        while running:
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in done:
                pair = running.pop(future)
                calls, refused = _record(record, refusals, pair, future.result())
                _count_calls(summary, pair, calls)
                if refused is not None and not stop.is_set():
                    stop.set()
                    summary.stopped = f"the project could not record a pair: {refused}"
                if calls[-1].outcome in TRANSPORT_FAILURES and not stop.is_set():
                    stop.set()
                    summary.stopped = f"{calls[-1].outcome}: {calls[-1].detail}"
                submit_next()
    summary.seconds = time.perf_counter() - started
    return summary


def _record(
    record: Recorder, refusals: Refusals, pair: Pair, calls: list[Call]
) -> tuple[list[Call], str | None]:
    """Record the pair's calls; if the store refuses them, record one malformed call in their
    place. Returns the calls as recorded, and why the store refused even that (or None)."""
    try:
        record(pair, calls)
        return calls, None
    except refusals as error:
        seconds = sum(call.seconds for call in calls)
        detail = judge_http.one_line(f"not stored ({type(error).__name__}: {error})")
        calls = [Call(MALFORMED, seconds, detail=detail)]
    try:
        record(pair, calls)
        return calls, None
    except refusals as error:
        return calls, judge_http.one_line(f"{type(error).__name__}: {error}")


def _count_calls(summary: JudgingSummary, pair: Pair, calls: Sequence[Call]) -> None:
    summary.calls += len(calls)
    summary.prompt_tokens += sum(call.prompt_tokens or 0 for call in calls)
    summary.completion_tokens += sum(call.completion_tokens or 0 for call in calls)
    last = calls[-1]
    if last.outcome == OK:
        summary.labelled += 1
        return
    summary.failed[last.outcome] = summary.failed.get(last.outcome, 0) + 1
    summary.failures.append(
        {
            "query_id": pair.query_id,
            "doc_id": pair.doc_id,
            "outcome": last.outcome,
            "detail": last.detail,
        }
    )


def call_rows(pair: Pair, calls: Sequence[Call], context: Mapping[str, object]) -> list[dict]:
    """The store's rows for one pair's calls: the ``context`` (judge, model, prompt hash)
    plus each call's figures, the attempt number from 1."""
    return [
        {
            **context,
            "query_id": pair.query_id,
            "doc_id": pair.doc_id,
            "attempt": attempt,
            "outcome": call.outcome,
            "grade": call.grade,
            "reason": call.reason,
            "detail": call.detail,
            "prompt_tokens": call.prompt_tokens,
            "completion_tokens": call.completion_tokens,
            "seconds": call.seconds,
        }
        for attempt, call in enumerate(calls, start=1)
    ]


def judge_project(
    store,
    endpoint: Endpoint,
    prompt: Prompt,
    judge: str,
    rows: Sequence[Mapping[str, str]],
    concurrency: int = 4,
) -> JudgingSummary:
    """Judge ``rows`` (from :meth:`goldset.labeler.store.Store.machine_pairs`) and keep every call
    and label in ``store`` as each pair finishes, so that a stop loses nothing recorded."""
    context = {"judge": judge, "model": endpoint.model, "prompt_sha256": prompt.sha256}

    def record(pair: Pair, calls: list[Call]) -> None:
        store.record_judge_calls(call_rows(pair, calls, context))

    pairs = [Pair(**{name: row[name] for name in Pair.__dataclass_fields__}) for row in rows]
    return judge_pairs(
        pairs,
        endpoint,
        prompt,
        record,
        judge=judge,
        concurrency=concurrency,
        refusals=store.RECORD_FAILURES,
    )
