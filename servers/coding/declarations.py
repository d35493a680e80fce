"""What coding declares for the toolkit: what its container needs to run the sandbox, and why a recorded prod
session is not mined."""

from __future__ import annotations

from openenv_mcp.environment.declarations import ContainerNeeds, Declarations, Mining

__all__ = ["declarations"]

declarations = Declarations(
    mining=Mining(
        why_not="a coding task is graded by hidden tests written for its problem; a recording holds the code a "
        "session ran and what it printed, not a problem statement nor the tests that would grade an answer"
    ),
    # The sandbox runs code as per-episode uids in fresh namespaces: the server must be root in its container (it
    # never runs code as root), with CAP_SYS_ADMIN and no AppArmor mount ban for unshare; its prod workspace is a
    # volume owned by the image's 'sandbox' account.
    container=ContainerNeeds(
        user="root",
        cap_add=("SYS_ADMIN",),
        security_opt=("apparmor=unconfined",),
        prod_environment={"CODING_WORKSPACE": "/srv/workspace"},
        prod_volumes={"coding-workspace": "/srv/workspace"},
        volume_owner="10002:10002",
    ),
)
"""coding's declarations (``Environment.declares``)."""
