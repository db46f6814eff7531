"""Projection tests: the pure leadership rules, the runner, the queries and the CLI."""
