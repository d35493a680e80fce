"""Running servers beyond one process: compose files and images, Kubernetes manifests, providers that
start servers, provisioning of prod services, and replicas as Ray actors (``ray_pool`` over ``ray_replica``: the only
modules that import Ray). The client-side pool that spreads episodes over replicas is
:mod:`openenv_mcp.client.pool` (``pool`` here re-exports it)."""
