"""The error of a run that failed (a bad request is a cli_parser.UsageError)."""


class BenchError(Exception):
    """The run failed; the message is shown to the user (exit status 1)."""
