"""A whole class: ``grade-all``'s workers and records, its progress bar, its score summary."""
