// Everything a site may want to change, in one place (monitoring-mixins convention).
// Override it in your own jsonnet:
//   (import 'tunewatch-mixin/mixin.libsonnet') + { _config+:: { tunewatchSelector: 'job="tuning"' } }
// or edit it here and run `python3 mixin/render.py` to re-render rules/ and dashboards/.
{
  _config+:: {
    // Selects every tunewatch series, of both routes: `tunewatch serve` targets (scrape job
    // "tunewatch" in the docs' examples) and hosts that publish through node_exporter's
    // textfile collector (job "node", Debian's and the Prometheus docs' default).
    tunewatchSelector: 'job=~"tunewatch|node"',
    // Selects the scrape jobs of `tunewatch serve` only: such a target is down even when it
    // never answered once. (A node_exporter target is tunewatch's business only while it
    // publishes tunewatch results; node_exporter's own mixin alerts on the rest.)
    tunewatchServeSelector: 'job="tunewatch"',
    // Selects the node_exporter targets where tunewatch's textfile route was rolled out (the
    // scrape config of contrib/prometheus and contrib/ansible labels them tunewatch="textfile"):
    // such a host must publish tunewatch results, or TunewatchTextfileNeverArrived fires.
    tunewatchTextfileHostSelector: 'job="node", tunewatch="textfile"',
    // How long a rolled-out textfile host may stay without results: the timer's first scan
    // runs 2 minutes after boot, then every 15 minutes (4 missed scans).
    textfileArrivalFor: '1h',

    // Runbook sections: runbookURLBase + '#' + anchor (the alert name or check id, lower case).
    // Default: docs/runbook.md as the .deb and .rpm install it. Alertmanager's and Grafana's
    // readers are seldom on the scanned host, so set your own copy: a wiki page, or the file
    // served by your web server (the anchors are the section titles of docs/runbook.md).
    runbookURLBase: 'file:///usr/share/doc/tunewatch/runbook.md',

    // A scan older than this is stale: 4 missed scans at the 15-minute timer interval of
    // contrib/systemd (or serve's --scan.interval). Raise it if scans run less often.
    staleScanSeconds: 3600,
    // How long a target counts as "had tunewatch results" after its last one.
    resultsMemory: '1d',
    // Reversion alerts: how far back a pass counts, and the window before a boot or driver
    // change in which the last pass must lie (> scan interval + reboot time).
    reversionHistory: '12h',
    reversionWindowSeconds: 7200,

    // Check severity -> Alertmanager severity and `for`.
    checkFailingCritical: { checkSeverity: 'high', 'for': '10m' },
    checkFailingWarning: { checkSeverity: 'medium|low', 'for': '30m' },

    // Grafana.
    dashboardTags: ['tunewatch'],
    dashboardTimezone: 'utc',
    dashboardRefresh: '1m',
    fleetDashboardUID: 'tunewatch-fleet',
    hostDashboardUID: 'tunewatch-host',
  },
}
