"""Subcommands of ``balance-opt``; each module exposes ``register(subparsers)``."""
