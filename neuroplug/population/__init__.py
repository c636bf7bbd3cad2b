"""How a population's members are described, not stored: :mod:`.members` (the
:class:`~neuroplug.population.members.Population` every algorithm asks for and every backend
loads), :mod:`.noise` (the counter-based Gaussian noise a member's perturbation is regenerated
from) and :mod:`.lowrank` (low-rank perturbations). The package imports none of them: the
noise generator imports torch."""
