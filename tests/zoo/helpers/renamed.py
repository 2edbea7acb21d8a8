"""The adapter of the zoo's entries of public model code: the source's class runs unchanged, and the names it
gives its layers and buffers are stored under the contract's names."""


class _Renamed(nn.Module):
    """The source's names for its layers and buffers (``RENAMED``: its name -> the contract's), stored
    under the contract's names; the source's code runs unchanged."""
    RENAMED = {}

    def __setattr__(self, name, value):
        super().__setattr__(self.RENAMED.get(name, name), value)

    def __getattr__(self, name):
        return super().__getattr__(self.RENAMED.get(name, name))

    def register_buffer(self, name, tensor, persistent=True):
        super().register_buffer(self.RENAMED.get(name, name), tensor, persistent)
