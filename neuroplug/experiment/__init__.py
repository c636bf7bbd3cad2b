"""A run's composed config, from Hydra to typed settings: :mod:`.hydra_store` puts every
schema into Hydra's ConfigStore, :mod:`.typed` types the composed config once at the front
door, :mod:`.network_choice` picks and builds the network ``net.type`` names."""
