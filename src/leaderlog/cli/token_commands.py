"""``leaderlog token``: create, revoke and list write-API tokens."""

from __future__ import annotations

import click

from leaderlog.cli._app import Context, main, print_json, run
from leaderlog.tokens import Tokens


@main.group("token")
def token_group() -> None:
    """Manage write-API tokens (stored hashed; shown only once).

    \b
    Example:
      leaderlog token create alice
      leaderlog token revoke alice
    """


@token_group.command("create")
@click.argument("name")
@click.pass_obj
def create_command(context: Context, name: str) -> None:
    """Create a token for NAME and print it once; appends made with it have actor NAME.

    \b
    Example:
      T=$(leaderlog token create alice)
    """

    async def go() -> None:
        async with context.log(create=True) as log:
            token = await Tokens(log.store).create(name)
        click.echo(token)
        click.echo(f"token for {name!r} created; it is shown only this once", err=True)

    run(go)


@token_group.command("revoke")
@click.argument("name")
@click.pass_obj
def revoke_command(context: Context, name: str) -> None:
    """Revoke NAME's token; it stops working at once.

    \b
    Example:
      leaderlog token revoke alice
    """

    async def go() -> None:
        async with context.log(create=False) as log:
            await Tokens(log.store).revoke(name)
        click.echo(f"token for {name!r} revoked")

    run(go)


@token_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_obj
def list_command(context: Context, as_json: bool) -> None:
    """List token names with when they were created and revoked (never the tokens).

    \b
    Example:
      leaderlog token list --json
    """

    async def go() -> None:
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
        for token in tokens:
            state = f"revoked {token.revoked_at}" if token.revoked_at else "live"
            click.echo(f"{token.name:<24} created {token.created_at}  {state}")

    run(go)
