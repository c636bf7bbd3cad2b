"""Configuration: schemas of the core groups, where ``conf/`` lives, and typed conversion."""
