"""Commands over the projections: state, history, claim, audit, rebuild, projections.

Query commands (and rebuild) first bring the projections up to the head of the log, so
answers include everything appended so far; ``projections`` lists them as they stand.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from functools import partial
from typing import Any, TypedDict

import click

from leaderlog.cli._app import (
    Context,
    OutputLost,
    WholeNumber,
    echo_line,
    is_output_error,
    logged_on_stderr,
    main,
    print_json,
    print_json_in_parts,
    run,
)
from leaderlog.cli._terminal import bars, count_bar
from leaderlog.errors import ProjectionError, ProjectionFailed
from leaderlog.projections import (
    BUILTIN,
    InvalidQuery,
    ProjectionRunner,
    Queries,
    load_projection,
    modules_not_found,
    runner_for,
)
from leaderlog.projections.loading import (
    builtin_named_modules,
    check_projection_name,
    module_is_there,
    shown_path,
    user_projection_folder,
)
from leaderlog.projections.runner import LeftOut, events_to_apply, forget_projection

# Catching up by fewer events than this shows no progress bar: it would only flicker.
PROGRESS_THRESHOLD = 5000
# A history of fewer posts than this is worked out without a progress bar, in seconds.
HISTORY_BAR_POSTS = 1000


@contextmanager
def catch_up_bars(doing: str) -> Iterator[Callable[[str, int, int], None]]:
    """A progress callback, (projections, events applied, events to apply), drawn as a bar
    for each group of projections with at least ``PROGRESS_THRESHOLD`` events to apply,
    labelled "``doing`` NAMES"."""
    with bars("events", PROGRESS_THRESHOLD) as show:
        yield lambda names, applied, total: show(f"{doing} {names}", applied, total)


@contextmanager
def _runner_warnings_on_stderr() -> Iterator[None]:
    """What the runner logs while a command runs it (a slow page it goes on with, say), on
    stderr as the command's other warnings are."""
    with logged_on_stderr("leaderlog.projections"):
        yield


async def catch_up_for_queries(runner: ProjectionRunner) -> None:
    """Bring the runner's projections to the head before a query answers.

    Queries read the built-in projections only, so a user projection that fails is reported
    on stderr and left behind rather than refusing the answer; a built-in that fails is an
    error, unless it stopped before an event a newer leaderlog wrote: that is said on stderr,
    and the answers stop before it (one that needs it names it), as a server's do.
    """
    # A query waits at most one time limit for a slow user projection (it reads only the
    # built-ins); `rebuild` and servers take it on with smaller pages.
    runner.go_on_smaller = False
    try:
        with _runner_warnings_on_stderr():
            await _catch_up(runner)
    except ProjectionFailed as failed:
        if any(
            failure.name in BUILTIN and not failure.at_a_newer_version_s_event
            for failure in failed.failures
        ):
            raise
        for failure in failed.failures:
            # Escaped: the error a projection raised may quote stored text (a name holding
            # a right-to-left override would reorder the line).
            echo_line(f"warning: {failure}", err=True)
    for problem in _not_loading(runner):
        echo_line(f"warning: {problem}", err=True)


def _not_loading(runner: ProjectionRunner) -> list[str]:
    """User projection modules that are there but not loaded: one named like a built-in
    (the built-in is used instead), and those built here before that no longer load.

    The runner leaves the latter out so that a broken module never stops a query, which
    would otherwise leave them behind in silence. A module that is not there at all (a
    command run from another folder) is left to ``leaderlog projections`` to explain.
    """
    return builtin_named_modules(builtin=BUILTIN) + [
        f"projection {name} could not be loaded: {missing.error}; "
        f"it stays at position {missing.position} until that is fixed"
        for name, missing in runner.not_loaded.items()
    ]


def _running(runner: ProjectionRunner) -> list[str]:
    """The runner's projections it can run (not left out)."""
    return [p.name for p in runner.projections if not isinstance(p, LeftOut)]


async def _catch_up(runner: ProjectionRunner) -> None:
    every = await runner.status()
    running = set(_running(runner))
    statuses = [status for status in every if status.name in running]
    versions = {projection.name: projection.version for projection in runner.projections}
    if statuses and all(
        status.version == versions[status.name] and 0 < status.checkpoint == status.head
        for status in statuses
    ):
        # Nothing to apply: no write transaction either, which would wait for (and, past the
        # busy timeout, fail beside) another process writing, such as a long import. Those
        # left out are reported all the same, as a run with events to apply reports them.
        checkpoints = {status.name: status.checkpoint for status in every}
        left_out = [
            projection.failure(checkpoints[projection.name])
            for projection in runner.projections
            if isinstance(projection, LeftOut) and projection.name in checkpoints
        ]
        if left_out:
            raise ProjectionFailed(left_out, position=statuses[0].head)
        return
    start, head = events_to_apply(runner, every)
    if head - start < PROGRESS_THRESHOLD:
        await runner.catch_up()
        return
    with count_bar("updating projections", start=start, total=head - start) as advance:
        await runner.catch_up(advance)


@asynccontextmanager
async def _current(
    context: Context, check: Callable[[], object], known_at: str | None = None
) -> AsyncIterator[Queries]:
    """Queries over projections brought up to the head, once ``check`` (the question's
    values, checked without the store) and ``known_at`` have passed: a usage mistake is
    refused before the projections are built or brought up to date, which writes to the
    database and can take minutes on a large log."""
    with _usage_mistakes():
        check()
    async with context.log(create=False) as log:
        with _usage_mistakes():
            await Queries(log.store).check_known_at(known_at)
        await catch_up_for_queries(await runner_for(log.store))
        with _usage_mistakes():
            yield Queries(log.store)


@contextmanager
def _usage_mistakes() -> Iterator[None]:
    """A value an option refuses is a usage mistake: exit 2 with the command's usage, as
    click does for the values it checks itself."""
    try:
        yield
    except InvalidQuery as error:
        # Every value refused, not only the first, each on a line of its own as click says
        # the first: one run tells of every mistake.
        said = "\nError: ".join(map(_said_of_options, error.all))
        raise click.UsageError(said) from None


def _said_of_options(refusal: InvalidQuery) -> str:
    """A refusal with the parameters it names called as the command's options."""
    if not refusal.parameter:
        return str(refusal)
    against = None if refusal.against is None else _spelled(refusal.against)
    return refusal.named_as(_spelled(refusal.parameter), against)


# Query parameters the commands take as arguments, named as click names them.
_ARGUMENTS = {"claim": "'ID'"}


def _spelled(parameter: str) -> str:
    """A query parameter as the command line names it: an argument, or an option."""
    return _ARGUMENTS.get(parameter, f"--{parameter}".replace("_", "-"))


# --- formatting ----------------------------------------------------------------------------------


def _when(date: Mapping[str, Any] | None) -> str:
    if not date:
        return "date unknown"
    words = [] if date.get("qualifier", "on") == "on" else [str(date["qualifier"])]
    if date.get("date"):
        words.append(str(date["date"]))
    if date.get("text"):
        words.append(f'"{date["text"]}"')
    if not date.get("date") and not date.get("text"):
        words.append("date unknown")
    if date.get("basis") in ("published", "recorded"):
        words.append(f"({date['basis']})")
    return " ".join(words)


def _from_a_report(anchor: Mapping[str, Any] | None) -> tuple[str, str] | None:
    """For a date known only from a report (its source's publication, or else its
    recording): the date, and which of the two it is, naming the source, which need not be
    the one that reported the claim ("when source wire-b was out": it confirmed it)."""
    if not anchor or anchor.get("basis") not in ("published", "recorded"):
        return None
    undated = {key: value for key, value in anchor.items() if key not in ("basis", "source")}
    source = anchor.get("source")
    if anchor["basis"] == "published":
        out = f"when source {source} was out" if source else "when the source was out"
    else:
        out = f"when recorded from source {source}" if source else "when recorded"
    return _when(undated), out


def _undated(current: Mapping[str, Any]) -> str | None:
    """For a change on a date not given, the day ``state`` counts it from, with the
    source's own words for when, if any."""
    reported = _from_a_report(current.get("counts_from"))
    if reported is None:
        return None
    effective = current.get("effective") or {}
    words = f'"{effective["text"]}"' if effective.get("text") else "on a date not given"
    return f"{words} (counted from {reported[0]}, {reported[1]})"


def _since(date: Mapping[str, Any] | None, lead: str = "since ") -> str:
    """When a tenure began: for one known only from a report, when the report shows it held
    ("by about 2025-05 (when source fox-ice-shakeup-2025-05 was out)"), not when it began."""
    reported = _from_a_report(date)
    if reported is not None:
        return f"by {reported[0]} ({reported[1]})"
    return f"{lead}{_when(date)}"


def _until(date: Mapping[str, Any] | None) -> str:
    """When a tenure ended: for an end known only from a report, that it had ended by then
    ("gone by about 2025-05 (when source ... was out)"), as :func:`_since` says of a start."""
    if not date:
        return " to now"
    reported = _from_a_report(date)
    if reported is not None:
        return f", gone by {reported[0]} ({reported[1]})"
    return f" to {_when(date)}"


def _who(item: Mapping[str, Any]) -> str:
    return f"{item.get('name') or item['person']} ({item['person']})"


def _cause(cause: str) -> str:
    # "2025-07-01 to 2026-03 (unknown)" reads as a date unknown; the feeds say "cause unknown".
    return "cause unknown" if cause == "unknown" else cause


def _change(item: Mapping[str, Any]) -> str:
    what = {"appointment": "appointment", "departure": "departure", "incumbency": "holding"}
    cause = f", {_cause(item['cause'])}" if item.get("cause") else ""
    attribution = item["attribution"]
    parties = ", ".join(attribution.get("parties") or [])
    told = f"{attribution['kind']}{f': {parties}' if parties else ''}"
    # "appointment of X, expected": an unspecified capacity goes unsaid, as in `claim`.
    capacity = "" if item["capacity"] == "unspecified" else f" as {item['capacity']}"
    return (
        f"{what[item['kind']]} of {_who(item)}{capacity}{cause}, "
        f"{item['modality']} {_when(item.get('effective'))} [{item['status']}; {told}] "
        f"claim {item['claim']}"
    )


def _known(known: Mapping[str, Any]) -> str:
    if not known["position"]:
        # Most often a --known-at time before the log's first event (say, before the import).
        return "known at position 0 (nothing was recorded by then)"
    through = f", recorded through {known['recorded_through']}" if known["recorded_through"] else ""
    return f"known at position {known['position']}{through}"


# What an empty log answers instead of "(no posts)", so that a first run says what to do.
_EMPTY_LOG = (
    "  (no posts: the log is empty; import records with leaderlog import FILE, or start "
    "leaderlog serve, which loads the seed article into an empty log)"
)


async def _print_state(
    answer: Mapping[str, Any], parts: AsyncIterator[list[dict[str, Any]]], *, log_is_empty: bool
) -> None:
    scope = f" in {answer['org']['name']} ({answer['org']['org']})" if answer["org"] else ""
    echo_line(f"Leadership{scope} as of {answer['as_of']}, {_known(answer['known_at'])}")
    printed = False
    async for posts in parts:
        _print_posts(posts)
        printed = printed or bool(posts)
    if not printed:
        echo_line(_EMPTY_LOG if log_is_empty else "  (no posts)")


def _print_posts(posts: Sequence[Mapping[str, Any]]) -> None:
    # A conflict's people by name where any post shown holds or awaits them; by id otherwise,
    # as its JSON gives them.
    names = {
        item["person"]: item["name"]
        for post in posts
        for item in (*post["holders"], *post["pending"])
        if item.get("name")
    }
    for post in posts:
        about = post["post"]
        echo_line("")
        echo_line(f"{about['title']} ({about['post']}, {about['org_name']}): {post['vacancy']}")
        for holder in post["holders"]:
            echo_line(
                f"  holder    {_who(holder)}, {holder['capacity']}, "
                f"{_since(holder['since'])} [{holder['status']}]"
            )
        for item in post["pending"]:
            echo_line(f"  pending   {_change(item)}")
        for conflict in post["conflicts"]:
            persons = ", ".join(
                f"{names[person]} ({person})" if person in names else person
                for person in conflict["persons"]
            )
            echo_line(
                f"  conflict  {conflict['kind']}: {persons}; claims "
                f"{', '.join(conflict['claims'])} - {conflict['reason']}"
            )


async def _in_parts(items: Iterator[Any], size: int = 500) -> AsyncIterator[list[Any]]:
    """``items`` as lists of ``size``, the parts :func:`print_json_in_parts` prints."""
    while part := list(itertools.islice(items, size)):
        yield part


def _print_history(
    answer: Mapping[str, Any],
    pending: Iterator[Mapping[str, Any]],
    tenures: Iterator[Mapping[str, Any]],
) -> None:
    ((kind, subject),) = answer["subject"].items()
    title = subject.get("name") or subject.get("title") or subject[kind]
    echo_line(f"History of {kind} {title} ({subject[kind]}), {_known(answer['known_at'])}")
    first = next(tenures, None)
    if first is None:
        echo_line("  (no tenures)")
    for tenure in itertools.chain([first] if first is not None else [], tenures):
        start = _since(tenure["start"], lead="") if tenure["start"] else "start unknown"
        cause = f" ({_cause(tenure['cause'])})" if tenure["cause"] else ""
        echo_line(
            f"  {tenure['post_title']} ({tenure['post']}): {_who(tenure)}, {tenure['capacity']}, "
            f"{start}{_until(tenure['end'])}{cause} [{tenure['status']}]"
        )
        for evidence in tenure["evidence"]:
            # Every source that reported, confirmed or corrected it: a confirmation is
            # evidence too. One that only disputed it is said apart, not as a source of it.
            disputing = evidence.get("disputed_by") or []
            reporting = [
                source
                for source in evidence.get("sources") or [evidence["source"]]
                if source not in disputing or source == evidence["source"]
            ]
            disputed = [source for source in disputing if source not in reporting]
            echo_line(
                f"      {evidence['kind']} claim {evidence['claim']} ({evidence['modality']}, "
                f"{evidence['status']}) from {_publishers(answer, reporting)}"
                + (f"; disputed by {_publishers(answer, disputed)}" if disputed else "")
            )
    for item in pending:
        echo_line(f"  pending   {item['post']}: {_change(item)}")


def _publishers(answer: Mapping[str, Any], sources: Sequence[str]) -> str:
    """The publishers of ``sources`` (each source's id where the answer lacks it), once each."""
    named = [answer["sources"].get(source, {}).get("publisher", source) for source in sources]
    return ", ".join(dict.fromkeys(named))


def _print_claim(answer: Mapping[str, Any]) -> None:
    current = answer["current"]
    echo_line(f"Claim {answer['claim']}: {answer['status']}, {_known(answer['known_at'])}")
    # "as acting Executive Associate Director": an unspecified capacity goes unsaid.
    capacity = "" if current["capacity"] == "unspecified" else f"{current['capacity']} "
    # A confirmation's date is the one that holds (until a correction gives another).
    confirmed = current.get("confirmed_effective")
    when = f", confirmed for {_when(confirmed)}" if confirmed else ""
    effective = _undated(current) or _when(current["effective"])
    # "rumored, date unknown", where "rumored about 2025-05" reads on
    joined = ", " if effective.startswith("date unknown") else " "
    cause = f" ({_cause(current['cause'])})" if current.get("cause") else ""
    echo_line(
        f"  {current['kind']} of {_who(current)} as {capacity}"
        f"{current.get('post_title') or current['post']} ({current['post']}){cause}, "
        f"{current['modality']}{joined}{effective}{when}"
    )
    # Who the claim rests on, as a correction of it is shown ("attribution -> named (Axios)").
    echo_line(f"  attribution: {_shown_change('attribution', current['attribution'])}")
    if current.get("quote"):
        echo_line(f'  "{current["quote"]}"')
    for step in answer["lifecycle"]:
        source = answer["sources"].get(step["source"] or "", {})
        origin = f" from {source.get('publisher')} <{source.get('url')}>" if source else ""
        said = [part for part in (_step_detail(step), step.get("reason")) if part]
        echo_line(
            f"  {step['position']:>8}  {step['recorded_at']}  {step['type']:<16} by "
            f"{step['actor']}{origin}{': ' + '; '.join(said) if said else ''}"
        )
        if step.get("quote"):
            echo_line(f'            "{step["quote"]}"')
    for dispute in answer.get("disputed_by", []):
        source = answer["sources"].get(dispute["source"] or "", {})
        origin = f" from {source.get('publisher')} <{source.get('url')}>" if source else ""
        echo_line(
            f"  {dispute['position']:>8}  disputed by claim {dispute['claim']}{origin}: "
            f"{dispute['reason']}"
        )
    for comment in answer.get("comments", []):
        source = answer["sources"].get(comment["source"], {})
        outcome = _OUTCOMES.get(comment["outcome"], comment["outcome"])
        # A request for comment names the report it was made for, not a claim of it: said
        # so, lest a denial read as one of this claim when the report holds others.
        echo_line(
            f"  {comment['position']:>8}  comment asked of {comment['org']} for the report "
            f"by {source.get('publisher') or comment['source']}: {outcome}"
        )


def _step_detail(step: Mapping[str, Any]) -> str:
    """What a confirmation or correction says of the claim, beyond its reason."""
    if step["type"] == "claim.confirmed" and step.get("effective"):
        return f"for {_when(step['effective'])}"
    if step["type"] == "claim.disputed" and step.get("conflicts_with"):
        return f"against {', '.join(step['conflicts_with'])}"
    if step["type"] == "claim.corrected":
        return ", ".join(
            f"{name} -> {_shown_change(name, value)}" for name, value in step["changes"].items()
        )
    return ""


def _shown_change(name: str, value: Any) -> str:
    if value is None:
        return "none"
    if name == "effective":
        return _when(value)
    if name == "attribution":
        parties = ", ".join(value.get("parties") or [])
        return f"{value['kind']}{f' ({parties})' if parties else ''}"
    return str(value)


_OUTCOMES = {
    "no_response": "no response",
    "declined": "declined to comment",
    "denied": "denied",
    "confirmed": "confirmed",
}


def _print_audit(answer: Mapping[str, Any]) -> None:
    # Wide enough for the longest actor shown, so that the types stay in one column.
    width = max([10, *(len(event["actor"]) for event in answer["events"])])
    for event in answer["events"]:
        subject = event["claim"] or event["stream"].partition("-")[2]
        if event.get("outcome"):
            subject = f"asked {event['org']}: {_OUTCOMES.get(event['outcome'], event['outcome'])}"
        status = f" [{event['claim_status']}, {event['attribution']}]" if event["claim"] else ""
        source = f" {event['source']} ({event['publisher']})" if event["source"] else ""
        echo_line(
            f"{event['position']:>8}  {event['recorded_at']}  {event['actor']:<{width}} "
            f"{event['type']:<18} {subject}{status}{source}"
        )
    if not answer["events"]:
        echo_line("(no matching events)")
    if answer["next_after"] is not None:
        echo_line(f"... more: run it again with --after {answer['next_after']}")


# --- commands ------------------------------------------------------------------------------------

_KNOWN_AT_HELP = (
    "A log position, or an RFC 3339 time (what the log held then; a bare date is the end of "
    "that day, UTC). Default: now."
)


@main.command("state", short_help="Who holds each post, as of a date, as known at a time.")
@click.option("--org", metavar="ORG", help="Only this organisation and its sub-organisations.")
@click.option(
    "--as-of", "as_of", metavar="DATE", help="Effective date YYYY-MM-DD (default: today, in UTC)."
)
@click.option("--known-at", "known_at", metavar="TIME|POSITION", help=_KNOWN_AT_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print the answer as JSON.")
@click.pass_obj
def state_command(
    context: Context, org: str | None, as_of: str | None, known_at: str | None, as_json: bool
) -> None:
    """Who holds each post: holders, pending changes, vacancy and conflicts.

    Two time axes: --as-of is the date the leadership is wanted for; --known-at is how much
    of the log to believe (a position, or a recorded time).

    \b
    Example:
      leaderlog state --org ice
      leaderlog state --as-of 2025-06-01 --known-at 22 --json
      leaderlog state --as-of 2025-06-01 --known-at 2099-01-01T00:00:00Z
    """

    async def answer_state() -> None:
        check = partial(Queries.check_state, org, as_of, known_at)
        async with _current(context, check, known_at) as queries:
            # Printed a part at a time: the whole state of a large log is tens of megabytes
            # of text, worked out from hundreds of thousands of claims.
            answer, parts = await queries.state_in_parts(org=org, as_of=as_of, known_at=known_at)
            head, _ = await queries.store.head()
            if as_json:
                await print_json_in_parts(answer, {"posts": parts})
            else:
                await _print_state(answer, parts, log_is_empty=head == 0)

    run(answer_state)


@main.command("history", short_help="Every tenure of a post, a person or an organisation.")
@click.option("--person", metavar="ID", help="Every tenure of this person.")
@click.option("--post", metavar="ID", help="Every tenure of this post.")
@click.option("--org", metavar="ID", help="Every tenure in this organisation's subtree.")
@click.option("--known-at", "known_at", metavar="TIME|POSITION", help=_KNOWN_AT_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print the answer as JSON.")
@click.pass_obj
def history_command(
    context: Context,
    person: str | None,
    post: str | None,
    org: str | None,
    known_at: str | None,
    as_json: bool,
) -> None:
    """Timelines: every tenure with its start, end, cause and evidence.

    Give exactly one of --person, --post or --org.

    \b
    Example:
      leaderlog history --post ice-hsi-ead
      leaderlog history --person robert-hammer --json
      leaderlog history --org dhs
    """

    if sum(given is not None for given in (person, post, org)) != 1:
        raise click.UsageError("give exactly one of --person, --post or --org")

    async def answer_history() -> None:
        check = partial(Queries.check_history, person=person, post=post, org=org, known_at=known_at)
        async with _current(context, check, known_at) as queries:
            if org is not None:
                # A large subtree's tenures are worked out a part of its posts at a time and
                # printed one by one, as state prints its posts; in order, so only once all
                # are worked out (half a minute for thousands of posts): a bar shows how far.
                label = f"working out the history of {org}"
                with bars("posts", HISTORY_BAR_POSTS) as show:
                    rest, pending, tenures = await queries.history_in_parts(
                        org=org, known_at=known_at, progress=partial(show, label)
                    )
            else:
                rest = await queries.history(person=person, post=post, known_at=known_at)
                pending, tenures = iter(rest.pop("pending")), iter(rest.pop("tenures"))
        if as_json:
            lists = {"pending": _in_parts(pending), "tenures": _in_parts(tenures)}
            await print_json_in_parts(rest, lists)
        else:
            _print_history(rest, pending, tenures)

    run(answer_history)


@main.command("claim", short_help="One claim's lifecycle, with its sources.")
@click.argument("claim_id", metavar="ID")
@click.option("--known-at", "known_at", metavar="TIME|POSITION", help=_KNOWN_AT_HELP)
@click.option("--json", "as_json", is_flag=True, help="Print the answer as JSON.")
@click.pass_obj
def claim_command(context: Context, claim_id: str, known_at: str | None, as_json: bool) -> None:
    """One claim's lifecycle: reported, then confirmed, corrected, disputed or retracted.

    \b
    Example:
      leaderlog claim fox-ice-shakeup-2025-05-hammer-hsi-caption
      leaderlog claim fox-ice-shakeup-2025-05-genalo-retirement --json
    """

    async def answer_claim() -> None:
        check = partial(Queries.check_claim, claim_id, known_at)
        async with _current(context, check, known_at) as queries:
            answer = await queries.claim(claim_id, known_at=known_at)
        if as_json:
            print_json(answer)
        else:
            _print_claim(answer)

    run(answer_claim)


class _AuditFilters(TypedDict):
    """What audit is asked, given to its check and to the question alike: typed, so that a
    name or a type that either does not take is a mistake the type checker finds."""

    source: str | None
    publisher: str | None
    actor: str | None
    type: str | None
    status: str | None
    attribution: str | None
    recorded_from: str | None
    recorded_to: str | None
    after: int
    limit: int


@main.command("audit", short_help="Who recorded what, from which source, and when.")
@click.option("--source", metavar="ID", help="Events citing this source.")
@click.option("--publisher", metavar="P", help="Events citing a source from this publisher.")
@click.option("--actor", metavar="A", help="Events appended by this actor.")
@click.option(
    "--type", "event_type", metavar="T", help="Events of this type, e.g. claim.retracted."
)
@click.option("--status", metavar="S", help="Events of claims now in this status.")
@click.option(
    "--attribution",
    metavar="K",
    help="Events of claims now attributed this way (as last corrected, if they were).",
)
@click.option(
    "--from",
    "recorded_from",
    metavar="TIME",
    help="Recorded at or after: an RFC 3339 time, or a day (2025-05-29), from its start (UTC).",
)
@click.option(
    "--to",
    "recorded_to",
    metavar="TIME",
    help="Recorded at or before: an RFC 3339 time, or a day, to its end (UTC).",
)
@click.option("--after", type=WholeNumber(min=0), default=0, help="Start after this position.")
@click.option(
    "--limit",
    type=WholeNumber(min=1, max=10_000),
    default=500,
    show_default=True,
    help="At most this many events; the next ones with --after.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the answer as JSON.")
@click.pass_obj
def audit_command(
    context: Context,
    source: str | None,
    publisher: str | None,
    actor: str | None,
    event_type: str | None,
    status: str | None,
    attribution: str | None,
    recorded_from: str | None,
    recorded_to: str | None,
    after: int,
    limit: int,
    as_json: bool,
) -> None:
    """Who recorded what, from which source, and when; every filter given must match.

    --status and --attribution are those of the event's claim (status: reported, confirmed,
    corrected, disputed, retracted; attribution: official, named, anonymous, outlet).

    \b
    Example:
      leaderlog audit --attribution anonymous --status retracted --json
      leaderlog audit --publisher "Fox News" --type claim.disputed
      leaderlog audit --source fox-ice-shakeup-2025-05 --from 2025-01-01
    """

    filters: _AuditFilters = {
        "source": source,
        "publisher": publisher,
        "actor": actor,
        "type": event_type,
        "status": status,
        "attribution": attribution,
        "recorded_from": recorded_from,
        "recorded_to": recorded_to,
        "after": after,
        "limit": limit,
    }

    async def answer_audit() -> None:
        async with _current(context, partial(Queries.check_audit, **filters)) as queries:
            answer = await queries.audit(**filters)
        if as_json:
            print_json(answer)
        else:
            _print_audit(answer)

    run(answer_audit)


@main.command("rebuild", short_help="Rebuild projections from the log.")
@click.argument("names", nargs=-1, metavar="[NAME]...")
@click.pass_obj
def rebuild_command(context: Context, names: Sequence[str]) -> None:
    """Rebuild projections from the log (all of them by default), with a progress bar.

    A NAME that is not built in is loaded from projections/NAME.py (or the folder in
    $LEADERLOG_PROJECTIONS); once built, the query commands keep it current like the
    built-in ones. Without NAME, user projections that cannot run now (their module is not
    there, or does not load) are named on stderr and left as they are. If one projection
    fails, the others are rebuilt all the same and named before the error.

    \b
    Example:
      leaderlog rebuild
      leaderlog rebuild leadership
      leaderlog rebuild turnover    # projections/turnover.py, in leaderlog's repo
    """
    for name in names:
        if name not in BUILTIN:
            _check_name(name, "'NAME'")

    async def rebuild_projections() -> None:
        async with context.log(create=False) as log:
            runner = await runner_for(log.store, also=tuple(names))
            chosen = list(dict.fromkeys(names)) or _running(runner)
            head, _ = await log.store.head()
            started = time.perf_counter()
            failed: ProjectionFailed | None = None
            try:
                with (
                    _runner_warnings_on_stderr(),
                    count_bar(f"rebuilding {', '.join(chosen)}", start=0, total=head) as advance,
                ):
                    try:
                        position = await runner.rebuild(chosen, advance)
                    except ProjectionFailed as error:
                        # The others went on to the head: said below, before the error.
                        failed = error
                        position = head if error.position is None else error.position
            finally:
                # Said when the rebuild fails too: a module not loaded may be why.
                for warning in _not_loading(runner):
                    echo_line(f"warning: {warning}", err=True)
            elapsed = time.perf_counter() - started
            warnings = []
            if not names:
                registered = await runner.registered()
                warnings += [
                    str(p.failure(registered.get(p.name, (0, 0))[1]))
                    for p in runner.projections
                    if isinstance(p, LeftOut)
                ]
                warnings += _modules_not_found(runner, registered)
        for warning in warnings:
            echo_line(f"warning: {warning}", err=True)
        stopped = set(failed.names) if failed else set()
        rebuilt = [name for name in chosen if name not in stopped]
        try:
            if rebuilt:
                rate = f", {position / elapsed:,.0f} events/s" if elapsed > 0 and position else ""
                click.echo(
                    f"rebuilt {', '.join(rebuilt)} to position {position} in {elapsed:.1f} s{rate}"
                )
            for line in _also_rebuilt(runner, stopped, position):
                click.echo(line)
        except OSError as error:
            if not is_output_error(error):
                raise
            if failed is not None:
                # Said all the same: the lost output's error alone would hide the failure.
                echo_line(f"error: {failed}", err=True)
            if not rebuilt:
                raise
            # From the error alone, the rebuild would pass for failed.
            raise OutputLost(
                error, f"{', '.join(rebuilt)} rebuilt all the same, to position {position}"
            ) from None
        if failed is not None:
            raise failed

    run(
        rebuild_projections,
        interrupted="each projection stays at the last page it applied; the next command or "
        "server that reads them carries on from there",
    )


def _also_rebuilt(runner: ProjectionRunner, stopped: set[str], position: int) -> list[str]:
    """What a rebuild says of the projections it replayed besides those named, each with
    why it had to: never built here, built at another version, or beyond the log's end."""
    loaded = {projection.name: projection.version for projection in runner.projections}
    never = []
    lines = []
    for name, before in runner.also_rebuilt.items():
        if name in stopped:
            continue
        if before is None:
            never.append(name)
            continue
        version, checkpoint = before
        if version != loaded[name]:
            says = "leaderlog has" if name in BUILTIN else "its module says"
            why = f"version {version} in the database, {says} {loaded[name]}"
        else:
            why = (
                f"it had applied the log up to position {checkpoint}, beyond its end at "
                f"{position}: built from another log"
            )
        lines.append(f"also rebuilt {name} ({why})")
    if never:
        lines.insert(0, f"also built {', '.join(never)} (never built in this database before)")
    return lines


def _modules_not_found(
    runner: ProjectionRunner, registered: Mapping[str, tuple[int, int]]
) -> list[str]:
    """User projections built in this database whose module is not in the folder (a command
    run from another folder, or a module removed): a rebuild of everything leaves them as
    they are, and says so rather than pass for having rebuilt everything."""
    return [
        f"projection {name} is not rebuilt: {why}; it stays at position {registered[name][1]} "
        f"(if it is gone for good, `leaderlog projections --forget {name}` removes it)"
        for name, why in modules_not_found(runner, registered).items()
    ]


def _check_name(name: str, hint: str) -> None:
    """A name no projection can have is a usage mistake (exit 2), not a missing projection."""
    try:
        check_projection_name(name)
    except ProjectionError as error:
        raise click.BadParameter(str(error), param_hint=hint) from None


def _pending(status: dict[str, Any], loaded: int) -> str:
    """What ``leaderlog projections`` adds for a projection whose version changed."""
    says = "leaderlog has" if status["name"] in BUILTIN else "its module says"
    return (
        f"version {status['version']} in the database, {says} {loaded}: rebuilt at the next "
        "query, rebuild or server start"
    )


@main.command("projections", short_help="List projections with their checkpoint and lag.")
@click.option("--json", "as_json", is_flag=True, help="Print the list as JSON.")
@click.option(
    "--forget",
    metavar="NAME",
    help="Remove a user projection whose module is gone: drop its tables and checkpoint.",
)
@click.pass_obj
def projections_command(context: Context, as_json: bool, forget: str | None) -> None:
    """List projections with their version, checkpoint and lag behind the log.

    The list shows the projections as they stand: the query commands and rebuild bring them
    up to date, this command does not. A projection that cannot be kept up to date here says
    why (its module is not loaded, or another leaderlog version built it). One whose apply
    fails shows only its lag: the commands that bring it up to date (a query, or rebuild
    NAME) print the error.

    --forget NAME removes a user projection built in this database: its tables (those named
    p_NAME_...) and its checkpoint. One listed as not loaded may be forgotten; one that still
    runs is refused (remove or rename its module first). Built-in projections cannot be
    forgotten.

    \b
    Example:
      leaderlog projections
      leaderlog projections --json
      leaderlog projections --forget turnover    # its module deleted
    """
    if forget is not None:
        _forget(context, forget, as_json=as_json)
        return

    async def read_statuses() -> tuple[list[dict[str, Any]], list[str]]:
        async with context.log(create=False) as log:
            runner = await runner_for(log.store)
            statuses = []
            for projection, status in zip(runner.projections, await runner.status(), strict=True):
                shown: dict[str, Any] = status._asdict()
                if isinstance(projection, LeftOut):
                    shown["problem"] = f"not loaded: {projection.reason}"
                elif status.version != projection.version:
                    shown["problem"] = _pending(shown, projection.version)
                elif status.checkpoint > status.head:
                    # The head is read after the checkpoints: only a log cut short (or
                    # replaced) leaves one beyond it. No lag: 0 would pass it off as current.
                    shown["lag"] = None
                    shown["problem"] = (
                        f"applied the log up to position {status.checkpoint}, beyond its end: "
                        "events were removed from its end, or it was replaced (see leaderlog "
                        "verify)"
                    )
                statuses.append(shown)
            head, _ = await log.store.head()
            loaded = {status["name"] for status in statuses}
            # Built here once but not loadable now (run from another folder, say): listed,
            # with the reason, rather than silently left behind.
            for name, (version, checkpoint) in sorted((await runner.registered()).items()):
                if name in loaded:
                    continue
                try:
                    load_projection(name)
                    problem = "not loaded"
                except ProjectionError as error:
                    problem = f"not loaded: {error}"
                    if not module_is_there(name):
                        problem += (
                            f"; if it is gone for good, `leaderlog projections --forget {name}` "
                            "removes it"
                        )
                statuses.append(
                    {
                        "name": name,
                        "version": version,
                        "checkpoint": checkpoint,
                        "head": head,
                        "lag": head - checkpoint if checkpoint <= head else None,
                        "problem": problem,
                    }
                )
            return statuses, builtin_named_modules(builtin=BUILTIN)

    statuses, warnings = run(read_statuses)
    for warning in warnings:
        echo_line(f"warning: {warning}", err=True)
    if as_json:
        print_json(statuses)
        return
    width = max([len("name"), *(len(status["name"]) for status in statuses)])
    click.echo(f"{'name':<{width}} {'version':>7} {'checkpoint':>12} {'head':>12} {'lag':>10}")
    for status in statuses:
        problem = f"  {status['problem']}" if "problem" in status else ""
        lag = "-" if status["lag"] is None else status["lag"]
        click.echo(
            f"{status['name']:<{width}} {status['version']:>7} {status['checkpoint']:>12} "
            f"{status['head']:>12} {lag:>10}{problem}"
        )


def _forget(context: Context, name: str, *, as_json: bool) -> None:
    """``leaderlog projections --forget NAME``."""
    if name in BUILTIN:
        raise click.BadParameter(
            f"{name!r} is a built-in projection: it cannot be forgotten (leaderlog rebuild "
            f"{name} replays it instead)",
            param_hint="'--forget'",
        )
    _check_name(name, "'--forget'")
    folder = user_projection_folder()
    module = None if folder is None else folder / f"{name}.py"

    async def forget_tables() -> tuple[list[str], int | None]:
        async with context.log(create=False) as log:
            registered = await ProjectionRunner(log.store, []).registered()
            if name not in registered:
                built = sorted(set(registered) - set(BUILTIN))
                raise ProjectionError(
                    f"no user projection {name!r} was built in this database"
                    + (f"; built: {', '.join(built)}" if built else "")
                )
            # Loaded as every command loads it: one `leaderlog projections` lists as not
            # loaded (its module missing, broken, or clashing with another's names) is run
            # by none of them, so it may be forgotten.
            if module is not None and name in _running(await runner_for(log.store)):
                # Every runner that loads it would build it again (and a server that
                # has it loaded would go on writing to the tables dropped under it).
                raise ProjectionError(
                    f"projection {name} still loads from {shown_path(module)}: remove or "
                    "rename the module first (and restart any server that loaded it)"
                )
            return await forget_projection(log.store, name, set(registered) | set(BUILTIN))

    tables, position = run(forget_tables)
    dropped = f"dropped {', '.join(tables)} and" if tables else "it had no tables; dropped"
    done = f"{dropped} its checkpoint (it was at position {position})"
    try:
        if as_json:
            print_json({"forgot": name, "tables": tables, "position": position})
            return
        click.echo(f"forgot {name}: {done}")
        if module is not None and module.is_file():
            # Not registered any more, so no command loads it, unless it is built again.
            click.echo(
                f"its module {shown_path(module)} is still there: no command runs it unless "
                f"`leaderlog rebuild {name}` builds it again"
            )
    except OSError as error:
        if not is_output_error(error):
            raise
        # From the error alone, the projection would pass for still there.
        raise OutputLost(error, f"{name} was forgotten all the same: {done}") from None
