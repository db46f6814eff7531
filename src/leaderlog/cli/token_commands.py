"""``leaderlog token``: create, revoke and list write-API tokens."""

from __future__ import annotations

import click

from leaderlog.cli._app import (
    Context,
    OutputLost,
    echo_line,
    is_output_error,
    main,
    missing_sqlite_file,
    print_json,
    run,
)
from leaderlog.errors import StoreError, TokenError, TokenNameRefused
from leaderlog.projections.query_input import NOT_UTF8_TEXT
from leaderlog.tokens import Tokens, check_token_name


@main.group("token")
def token_group() -> None:
    """Manage write-API tokens (stored hashed; shown only once).

    \b
    Example:
      leaderlog token create alice
      leaderlog token revoke alice
    """


def _token_name(context: click.Context, parameter: click.Parameter, name: str) -> str:
    # Checked before the log is opened (or created), as click checks its own types.
    try:
        return check_token_name(name)
    except TokenNameRefused as error:
        raise click.BadParameter(str(error)) from None


@token_group.command("create", short_help="Create a token for NAME and print it once.")
@click.argument("name", callback=_token_name)
@click.option(
    "--same-writer",
    is_flag=True,
    help="The events the log holds as appended by NAME without a token are this writer's "
    "(a log moved by export and import): give NAME a token all the same.",
)
@click.pass_obj
def create_command(context: Context, name: str, same_writer: bool) -> None:
    """Create a token for NAME and print it once; appends made with it have actor NAME.

    NAME may not be one the log already holds as the actor of events no token of that name
    wrote (an import --actor NAME, say): the audit could not tell them apart. Give
    --same-writer when they are this writer's: a log moved by export and import, which
    carry no tokens, holds its writers' events without their tokens.

    \b
    Example:
      T=$(leaderlog token create alice)
      T=$(leaderlog --db sqlite:///moved.db token create alice --same-writer)
    """

    async def create_token() -> None:
        async with context.log(create=True) as log:
            tokens = Tokens(log.store)
            try:
                token = await tokens.create(name, same_writer=same_writer)
            except TokenNameRefused as error:
                raise click.BadParameter(str(error), param_hint="'NAME'") from None
            try:
                click.echo(token)
            except OSError as error:
                if not is_output_error(error):
                    raise
                raise OutputLost(error, await _withdraw_unshown(tokens, name)) from None
        click.echo(f"token for {name!r} created; it is shown only this once", err=True)

    run(create_token)


async def _withdraw_unshown(tokens: Tokens, name: str) -> str:
    """Revoke a token that could not be shown (nobody can use it, and while it is live the
    name cannot get another); say what became of it."""
    try:
        await tokens.revoke(name)
    except (TokenError, StoreError) as error:
        return (
            f"the token for {name!r} was created but not shown, and revoking it failed "
            f"({error}): revoke it with leaderlog token revoke {name}, then create it again"
        )
    return f"the token for {name!r} was never shown, so it was revoked: create it again"


@token_group.command("revoke")
@click.argument("name")
@click.pass_obj
def revoke_command(context: Context, name: str) -> None:
    """Revoke NAME's token; it stops working at once.

    \b
    Example:
      leaderlog token revoke alice
    """
    if NOT_UTF8_TEXT.search(name):
        # Neither database can be asked about it, and no token has such a name.
        raise click.BadParameter(
            f"token name {name!r} holds bytes that are not UTF-8 text (typed in another encoding?)",
            param_hint="'NAME'",
        )

    try:
        check_token_name(name)
        refusal = None
    except TokenNameRefused as error:
        refusal = click.BadParameter(str(error), param_hint="'NAME'")

    async def revoke_token() -> None:
        # A name create refuses is the same usage mistake here, unless an earlier version,
        # which let a name end in a newline, gave it a token: that one can still be revoked.
        if refusal is not None and not await _held_from_an_earlier_version(context, name):
            raise refusal
        async with context.log(create=False) as log:
            await Tokens(log.store).revoke(name)
        try:
            click.echo(f"token for {name!r} revoked")
        except OSError as error:
            if not is_output_error(error):
                raise
            # From the error alone, the token would pass for still live.
            raise OutputLost(error, f"the token for {name!r} was revoked all the same") from None

    run(revoke_token)


async def _held_from_an_earlier_version(context: Context, name: str) -> bool:
    """Whether the log holds a token named ``name``, a name create refuses: none does when
    there is no log to open (a missing file, a database or schema without one), and the name
    is then the mistake to report first, wherever the log is."""
    if missing_sqlite_file(context.db) is not None:
        return False
    try:
        async with context.log(create=False) as log:
            return name in {token.name for token in await Tokens(log.store).listing()}
    except StoreError:
        return False


@token_group.command("list", short_help="List token names, when created and revoked.")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_obj
def list_command(context: Context, as_json: bool) -> None:
    """List token names with when they were created and revoked (never the tokens).

    \b
    Example:
      leaderlog token list --json
    """

    async def list_tokens() -> None:
        async with context.log(create=False) as log:
            tokens = await Tokens(log.store).listing()
        if as_json:
            print_json(
                [
                    {"name": t.name, "created_at": t.created_at, "revoked_at": t.revoked_at}
                    for t in tokens
                ]
            )
            return
        if not tokens:
            # Said, as the other listings say they found nothing, rather than print nothing.
            click.echo("(no tokens: create one with leaderlog token create NAME)")
        # Wide enough for the longest name (64 characters may be given), so that the times
        # stay in one column.
        width = max([24, *(len(token.name) for token in tokens)])
        for token in tokens:
            state = f"revoked {token.revoked_at}" if token.revoked_at else "live"
            # Escaped: an earlier version let a name end in a newline, which would end the
            # line early and leave its times on a line that passes for another token's.
            echo_line(f"{token.name:<{width}} created {token.created_at}  {state}")

    run(list_tokens)
