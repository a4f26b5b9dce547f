"""``construct`` declarations of the binary layouts: the readable spec and the hot paths' test oracle."""
