"""CSI migration as kube-scheduler v1.30's volume plugins see it (csi-translation-lib).

In-tree volume plugins are *migrated* to CSI drivers: a migrated volume counts against
its CSI driver's attach limit (NodeVolumeLimits) instead of the in-tree limit plugins
(EBSLimits, GCEPDLimits, AzureDiskLimits, CinderLimits), and a bound PV of a migrated
plugin has its zone topology rewritten to the driver's key when the volume binder
checks its node affinity.

Which plugins are migrated (``isCSIMigrationOn``): in v1.30 the AWS EBS, GCE PD, Azure
Disk and Cinder migrations are GA and always on, *provided the node has a CSINode
object* (the limit plugins ask only that; the volume binder also wants the plugin named
in the CSINode's ``storage.alpha.kubernetes.io/migrated-plugins`` annotation).
Portworx and RBD migrations sit behind feature gates that are off by default in v1.30,
Azure File and vSphere are never "on" for the scheduler (they are migratable, so an
unbound claim of their class is not counted as a CSI volume of its provisioner either).

Translation keeps what the plugins read: the CSI driver's name, the volume handle
(``vol-…`` for ``aws://zone/vol-…`` EBS ids; ``projects/UNSPECIFIED/zones/Z/disks/PD`` or
``…/regions/R/…`` for GCE PDs from their zone labels; the disk URI of an Azure disk;
Cinder's volume id), and the node affinity (``translateTopologyFromInTreeToCSI``).
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Final

from ...objects import PersistentVolume, Volume
from ...selectors import EVERYTHING, IN, NodeSelectorTerm, Requirement, Selector

AWS_EBS_PLUGIN: Final = "kubernetes.io/aws-ebs"
GCE_PD_PLUGIN: Final = "kubernetes.io/gce-pd"
AZURE_DISK_PLUGIN: Final = "kubernetes.io/azure-disk"
AZURE_FILE_PLUGIN: Final = "kubernetes.io/azure-file"
CINDER_PLUGIN: Final = "kubernetes.io/cinder"
VSPHERE_PLUGIN: Final = "kubernetes.io/vsphere-volume"
PORTWORX_PLUGIN: Final = "kubernetes.io/portworx-volume"
RBD_PLUGIN: Final = "kubernetes.io/rbd"

#: Volume source key -> its in-tree plugin, for the migratable ones.
PLUGIN_OF_KIND: Final = {
    "awsElasticBlockStore": AWS_EBS_PLUGIN,
    "gcePersistentDisk": GCE_PD_PLUGIN,
    "azureDisk": AZURE_DISK_PLUGIN,
    "azureFile": AZURE_FILE_PLUGIN,
    "cinder": CINDER_PLUGIN,
    "vsphereVolume": VSPHERE_PLUGIN,
    "portworxVolume": PORTWORX_PLUGIN,
    "rbd": RBD_PLUGIN,
}
MIGRATABLE_PLUGINS: Final = frozenset(PLUGIN_OF_KIND.values())
#: The plugins whose migration is on in v1.30 by default (GA, locked).
MIGRATION_ON: Final = frozenset({AWS_EBS_PLUGIN, GCE_PD_PLUGIN, AZURE_DISK_PLUGIN, CINDER_PLUGIN})

CSI_DRIVER_OF: Final = {
    AWS_EBS_PLUGIN: "ebs.csi.aws.com",
    GCE_PD_PLUGIN: "pd.csi.storage.gke.io",
    AZURE_DISK_PLUGIN: "disk.csi.azure.com",
    CINDER_PLUGIN: "cinder.csi.openstack.org",
}
#: The CSI topology key a migrated PV's zone moves to (Azure Disk keeps its topology).
TOPOLOGY_KEY_OF: Final = {
    AWS_EBS_PLUGIN: "topology.ebs.csi.aws.com/zone",
    GCE_PD_PLUGIN: "topology.gke.io/zone",
    CINDER_PLUGIN: "topology.cinder.csi.openstack.org/zone",
}

GA_ZONE: Final = "topology.kubernetes.io/zone"
GA_REGION: Final = "topology.kubernetes.io/region"
BETA_ZONE: Final = "failure-domain.beta.kubernetes.io/zone"
BETA_REGION: Final = "failure-domain.beta.kubernetes.io/region"
UNSPECIFIED: Final = "UNSPECIFIED"
_AWS_VOLUME: Final = re.compile(r"^vol-[^/]*$")


class TranslationError(Exception):
    """The translator refused the volume (csi-translation-lib's error)."""


def migration_on(plugin: str, has_csi_node: bool) -> bool:
    """``isCSIMigrationOn`` for the limit plugins: a CSINode and a migrated plugin."""
    return has_csi_node and plugin in MIGRATION_ON


def _extra(volume: Volume, key: str) -> str:
    for name, value in volume.extra:
        if name == key:
            return value
    return ""


def ebs_volume_id(kubernetes_id: str) -> str:
    """``KubernetesVolumeIDToEBSVolumeID``: ``aws://zone/vol-x`` -> ``vol-x``."""
    if not kubernetes_id.startswith("aws://"):
        return kubernetes_id
    path = kubernetes_id[len("aws://") :]
    # url.Parse: the host is up to the first "/", the path the rest.
    _, slash, rest = path.partition("/")
    aws_id = ("/" + rest if slash else "").strip("/")
    if not _AWS_VOLUME.match(aws_id):
        raise TranslationError(f"Invalid format for AWS volume ({kubernetes_id})")
    return aws_id


def _gce_region(zones: list[str]) -> str:
    regions = set()
    for zone in zones:
        cut = zone.rfind("-")
        if cut < 0:
            raise TranslationError(f"zone {zone} does not have the expected format")
        regions.add(zone[:cut])
    if len(regions) != 1:
        raise TranslationError(f"multiple or no regions gotten from zones, got: {sorted(regions)}")
    return regions.pop()


def csi_volume(volume: Volume, pv: PersistentVolume | None = None) -> tuple[str, str]:
    """(driver, volume handle) of a migrated in-tree volume; ``pv`` when it is a PV's
    source (GCE PDs take their zone from the PV's labels). Raises TranslationError."""
    plugin = PLUGIN_OF_KIND.get(volume.kind, "")
    driver = CSI_DRIVER_OF.get(plugin)
    if driver is None:
        raise TranslationError(f"no CSI translation for {volume.kind}")
    if plugin == AWS_EBS_PLUGIN:
        return driver, ebs_volume_id(volume.handle)
    if plugin == GCE_PD_PLUGIN:
        labels = pv.labels if pv is not None else {}
        zones_label = labels.get(BETA_ZONE, "") or labels.get(GA_ZONE, "")
        zones = zones_label.split("__")
        if len(zones) == 1 and zones[0]:
            return driver, f"projects/{UNSPECIFIED}/zones/{zones[0]}/disks/{volume.handle}"
        if len(zones) > 1:
            region = _gce_region(zones)
            return driver, f"projects/{UNSPECIFIED}/regions/{region}/disks/{volume.handle}"
        return driver, f"projects/{UNSPECIFIED}/zones/{UNSPECIFIED}/disks/{volume.handle}"
    if plugin == AZURE_DISK_PLUGIN:
        kind = _extra(volume, "kind")
        if kind and kind.lower() != "managed":
            raise TranslationError(f"kind({kind}) is not supported in csi migration")
        return driver, _extra(volume, "diskURI")
    return driver, volume.handle  # Cinder


# -- node affinity (translateTopologyFromInTreeToCSI) ----------------------------------------


def _keys(terms: tuple[NodeSelectorTerm, ...] | None) -> set[str]:
    return {req.key for term in terms or () for req in term.labels.requirements}


def _rekey(terms: tuple[NodeSelectorTerm, ...], old: str, new: str) -> tuple[NodeSelectorTerm, ...]:
    out = []
    for term in terms:
        requirements = tuple(
            replace(req, key=new) if req.key == old else req for req in term.labels.requirements
        )
        out.append(replace(term, labels=replace(term.labels, requirements=requirements)))
    return tuple(out)


def translated_affinity(pv: PersistentVolume) -> tuple[NodeSelectorTerm, ...] | None:
    """The node affinity of ``pv`` once translated to its CSI driver (its zone under the
    driver's topology key, a beta region under the GA key); unchanged for plugins whose
    translation keeps the topology."""
    plugin = PLUGIN_OF_KIND.get(pv.source.kind, "")
    csi_key = TOPOLOGY_KEY_OF.get(plugin)
    if csi_key is None:
        return pv.node_affinity
    in_affinity = _keys(pv.node_affinity)
    if GA_ZONE in in_affinity:
        zone_label, region_label = GA_ZONE, GA_REGION
    elif BETA_ZONE in in_affinity:
        zone_label, region_label = BETA_ZONE, BETA_REGION
    elif GA_ZONE in pv.labels:
        zone_label, region_label = GA_ZONE, GA_REGION
    elif BETA_ZONE in pv.labels:
        zone_label, region_label = BETA_ZONE, BETA_REGION
    else:
        zone_label, region_label = GA_ZONE, GA_REGION
    terms = pv.node_affinity
    if terms and zone_label in in_affinity:
        terms = _rekey(terms, zone_label, csi_key)
    elif zone_label in pv.labels:
        zones = sorted({z.strip() for z in pv.labels[zone_label].split("__") if z.strip()})
        if zones:
            requirement = Requirement(csi_key, IN, frozenset(zones))
            if not terms:
                terms = (NodeSelectorTerm(Selector((requirement,)), EVERYTHING),)
            else:
                terms = tuple(
                    replace(
                        term,
                        labels=replace(
                            term.labels, requirements=(*term.labels.requirements, requirement)
                        ),
                        empty=False,
                    )
                    for term in terms
                )
    if terms and region_label == BETA_REGION and BETA_REGION in _keys(terms):
        terms = _rekey(terms, BETA_REGION, GA_REGION)
    return terms
