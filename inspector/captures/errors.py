"""The error of a --root that cannot be opened, apart from the opening code so that both the
light path (this host) and the heavy one (trees, tarballs, sosreports) can raise it."""


class CaptureError(Exception):
    """A --root argument that cannot be opened (one clear line for the user)."""
