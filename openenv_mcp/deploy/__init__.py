"""Running servers beyond one process: compose files and images, Kubernetes manifests, providers that
start servers, provisioning of prod services, and the client-side pool that spreads episodes over replicas
(``pool``; ``ray_pool`` over ``ray_replica`` keeps replicas as Ray actors: the only modules that import Ray)."""
