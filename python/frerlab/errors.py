"""Errors shared by every area of frerlab."""


class UsageError(Exception):
    """Bad input the user can fix: the message names the bad value and what would be valid."""
