// tunewatch monitoring mixin: alerts, recording rules and dashboards from one _config.
(import 'config.libsonnet') +
(import 'alerts.libsonnet') +
(import 'rules.libsonnet') +
(import 'dashboards/fleet.libsonnet') +
(import 'dashboards/host.libsonnet')
