"""The broker's request processors, one module per concern."""
