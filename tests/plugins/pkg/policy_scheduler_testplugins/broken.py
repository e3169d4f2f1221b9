"""A plugin whose package fails to import: ``policy-scheduler plugins`` lists it with its
error, and a policy naming it is refused with reason PluginLoadFailed."""

raise RuntimeError("this plugin is broken on purpose")
