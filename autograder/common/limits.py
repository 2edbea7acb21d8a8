"""How much a submission may hold: the same bound for a folder the sandbox copies and for a zip
that intake unpacks, so that neither path lets through what the other refuses."""

MAX_SUBMISSION_BYTES = 20 * 2**20
MAX_SUBMISSION_FILES = 1000
