"""Configuration: schemas of the core groups, where ``conf/`` lives, and the ConfigStore."""
