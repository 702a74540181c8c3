"""One error family, each carrying the evidence a person needs to act.

Every message says what was wrong, what was expected, and what to do next.
"""

from __future__ import annotations


class KitError(Exception):
    """Base of every error the kit raises on purpose; ``hint`` says what to do next."""

    def __init__(self, message: str, hint: str = "") -> None:
        self.message = message
        self.hint = hint
        super().__init__(self.__str__())

    def __str__(self) -> str:
        return f"{self.message}\n  -> {self.hint}" if self.hint else self.message


class UpstreamDriftError(KitError):
    """An upstream file no longer matches the checksum the kit was reviewed against."""


class PatchError(KitError):
    """A patch is malformed, or does not apply strictly (zero fuzz, zero offset)."""

    def __init__(
        self,
        message: str,
        hint: str = "",
        *,
        patch: str = "",
        hunk: int | None = None,
        line: int | None = None,
        expected: str | None = None,
        found: str | None = None,
    ) -> None:
        self.patch = patch
        self.hunk = hunk
        self.line = line
        self.expected = expected
        self.found = found
        details = []
        if expected is not None:
            details.append(f"  expected: {expected!r}")
        if found is not None:
            details.append(f"  found:    {found!r}")
        full = message + ("\n" + "\n".join(details) if details else "")
        super().__init__(full, hint)


class DataError(KitError):
    """A data set file or archive is missing, truncated, corrupt or has the wrong checksum."""


class CommandError(KitError):
    """An external command failed; carries its argv, exit code and the tail of its output."""

    def __init__(self, argv: list[str], returncode: int, output_tail: str, hint: str = "") -> None:
        self.argv = argv
        self.returncode = returncode
        self.output_tail = output_tail
        message = f"command failed with exit code {returncode}: {' '.join(argv)}"
        if output_tail:
            message += "\n  last output:\n" + "\n".join("    " + l for l in output_tail.splitlines())
        super().__init__(message, hint)


class ClusterError(KitError):
    """A role could not start, did not become reachable, or died during a run."""


class PortBusyError(ClusterError):
    """A port a role needs is already held by another process."""


class RunFolderExistsError(KitError):
    """A run folder from an earlier run would be overwritten."""


class DockerError(KitError):
    """The Docker engine is missing, unreachable, or an image or container is not as needed."""
