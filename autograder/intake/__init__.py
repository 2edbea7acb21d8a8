"""What a submission is: a folder that holds ``attention_lab/``, the module files themselves, the
course's notebooks, a folder of them, or a zip of any of these. Nothing here runs student code."""
