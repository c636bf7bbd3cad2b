"""Policy networks with a flat parameter layout, evaluated for many members at once.

Build one with :func:`neuroplug.experiment.network_choice.build_network`. This package imports nothing
eagerly: the contract file (:mod:`neuroplug.api`) reads :mod:`neuroplug.nets.normalizer`
without pulling in torch.
"""
