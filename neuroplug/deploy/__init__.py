"""A trained policy outside the training loop: loaded as a ``torch.nn.Module``
(:func:`load_policy`), exported to TorchScript or ONNX (:mod:`.export`), shared as a
folder in the Hugging Face Hub's layout (:mod:`.share`)."""
