"""The application layer: what each command does, as plain functions of frozen requests.

``cli.py`` turns the command line into these requests and prints what the functions return; the
demo and ``tune --gpus`` call them directly.  Nothing here prints command output (it logs), and an
error worth one line to the user is an ``AppError``.  Every module imports torch, SQLAlchemy and
Optuna only inside the functions that need them, so that the read-only commands and every bad input
answer without paying for those imports.
"""
