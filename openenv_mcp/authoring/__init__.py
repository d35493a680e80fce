"""What an environment author uses beyond the core: the conformance check every server must pass."""
