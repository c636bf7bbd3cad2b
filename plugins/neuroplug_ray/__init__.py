"""``scheduler=ray``: one population's episodes played by Ray actors on many machines."""
