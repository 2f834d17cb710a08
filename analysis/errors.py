"""Errors a user can cause with an input. Everything else is a bug and may propagate."""


class AnalysisError(Exception):
    """Base of every error whose message is meant for the person who uploaded the file."""


class UnrecognizedFormat(AnalysisError):
    """The input is none of the formats we read; the message says what it looked like."""


class ParseError(AnalysisError):
    """The input claimed a format but broke its rules beyond what we can read around."""
