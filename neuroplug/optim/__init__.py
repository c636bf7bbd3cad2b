"""Optimizers shared by evolution and the learners: :mod:`.adam`."""
