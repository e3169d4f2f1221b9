"""The volumes' names the scheduler shares: annotations, API words, failure reasons.

The volume predicates (``engine/predicates/volumes.py``), the in-tree volume plugins
(``engine/intree``), preemption, the queueing hints, the operator's volume binder and
``explain`` all speak of these; they live here, at the bottom of the layers and
importing nothing, so that reading one name does not import the predicates.
"""

from __future__ import annotations

from typing import Final

# -- annotations the volume binder and the PV controller write ---------------------------

#: On a claim: the PV controller finished binding it (the binder writes it too).
ANN_BIND_COMPLETED: Final = "pv.kubernetes.io/bind-completed"
#: On a claim: the node a WaitForFirstConsumer claim is to be provisioned for.
ANN_SELECTED_NODE: Final = "volume.kubernetes.io/selected-node"

# -- the API's words ---------------------------------------------------------------------

#: A pod volume's source field naming a claim.
PVC: Final = "persistentVolumeClaim"
#: A StorageClass's volumeBindingMode that waits for the pod's node.
WAIT_FOR_FIRST_CONSUMER: Final = "WaitForFirstConsumer"
#: The provisioner of classes whose PVs are made by hand (local volumes).
NO_PROVISIONER: Final = "kubernetes.io/no-provisioner"

# -- failure reasons (kube-scheduler's words) --------------------------------------------

DISK_CONFLICT: Final = "node(s) had no available disk"
VOLUME_ZONE_CONFLICT: Final = "node(s) had no available volume zone"
MAX_VOLUME_COUNT_EXCEEDED: Final = "node(s) exceed max volume count"
VOLUME_NODE_CONFLICT: Final = "node(s) had volume node affinity conflict"
VOLUME_BIND_CONFLICT: Final = "node(s) didn't find available persistent volumes to bind"
UNBOUND_IMMEDIATE_CLAIMS: Final = "pod has unbound immediate PersistentVolumeClaims"
CLAIM_WITHOUT_NAME: Final = "PersistentVolumeClaim had no name"
