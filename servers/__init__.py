"""The environments shipped with openenv-mcp, one package each."""
