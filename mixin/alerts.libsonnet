// Alerting rules. Every alert: `severity` one of critical/warning/info (never templated),
// annotations summary, description and runbook_url (from _config.runbookURLBase), `for` >= 1m.
// The check's own severity is the series label `check_severity` (high/medium/low).
local host = '{{ with printf "tunewatch_host_info{instance=%q,job=%q}" $labels.instance $labels.job | query }} (host {{ (. | first).Labels.hostname }}){{ end }}';
// Object names come from tunewatch_object_status, exported only with --metrics.detail;
// without it the list is empty and the count (tunewatch_check_objects) still says how many.
local objects(status, check='$labels.check') =
  '{{ range $i, $o := printf "topk(5, tunewatch_object_status{instance=%q,job=%q,check=%q,status=\\"' + status
  + '\\"})" $labels.instance $labels.job ' + check + ' | query }}{{ if $i }}, {{ else }}: {{ end }}{{ $o.Labels.object }}{{ end }}';
local count(status, verb, check='$labels.check') =
  '{{ with printf "tunewatch_check_objects{instance=%q,job=%q,check=%q,status=\\"' + status
  + '\\"}" $labels.instance $labels.job ' + check + ' | query }}{{ . | first | value }} object(s) ' + verb
  + '{{ else }}Objects ' + verb + '{{ end }}';
local details = 'Per-object expected and actual values: `tunewatch scan` on the host, or the exporter\'s JSON report.';

// A static value gets `=`, alternatives `=~` (pint: promql/regexp).
local matcher(label, value) =
  if std.length(std.findSubstr('|', value)) > 0 then '%s=~"%s"' % [label, value] else '%s="%s"' % [label, value];

{
  local c = $._config,
  local runbook(anchor) = c.runbookURLBase + '#' + anchor,

  local checkFailing(level, cfg) = {
    alert: 'TunewatchCheckFailing',
    expr: 'tunewatch_check_status{%s, status="fail", %s} == 1' % [c.tunewatchSelector, matcher('check_severity', cfg.checkSeverity)],
    'for': cfg['for'],
    labels: { severity: level },
    annotations: {
      summary: 'Tuning check {{ $labels.check }} fails on {{ $labels.instance }}',
      description: std.join(' ', [
        'Check {{ $labels.check }} (check severity {{ $labels.check_severity }}, profile {{ $labels.profile }})',
        'fails on {{ $labels.instance }}' + host + ':',
        count('fail', 'fail') + objects('fail') + '.',
        details,
      ]),
      runbook_url: runbook('{{ $labels.check }}'),
    },
  },

  // Reversions are about runtime state a reboot or driver reload resets; a `-persistent`
  // check tests configuration, which neither resets (it fails with TunewatchCheckFailing).
  local reverted(name, level, cfg, since, checks, what, summary, extra='') = {
    alert: name,
    expr: |||
      (tunewatch_check_status{%(sel)s, status="fail", %(sev)s%(checks)s, check!~".+-persistent"} == 1)
      and on(instance, job, check)
      (
          max_over_time(instance_check:tunewatch_check_pass:timestamp{%(sel)s}[%(hist)s])
        - on(instance, job) group_left()
          %(since)s
        < 0 > -%(window)d
      )
    ||| % { sel: c.tunewatchSelector, sev: matcher('check_severity', cfg.checkSeverity), hist: c.reversionHistory,
            since: since, window: c.reversionWindowSeconds,
            checks: if checks == null then '' else ', check=~"%s"' % checks },
    'for': '5m',
    labels: { severity: level },
    annotations: {
      summary: '{{ $labels.check }} reverted after ' + summary + ' {{ $labels.instance }}',
      description: std.join(' ', [
        'Check {{ $labels.check }} (check severity {{ $labels.check_severity }}, profile {{ $labels.profile }})',
        'passed on {{ $labels.instance }}' + host + ' up to ' + what + ' and has failed since:',
        'the setting was applied at runtime only, or its boot-time mechanism did not run.' + extra,
        count('fail', 'fail') + objects('fail') + '.',
        details,
      ]),
      runbook_url: runbook(std.asciiLower(name)),
    },
  },
  local rebootSince = 'tunewatch_boot_time_seconds{%s}' % c.tunewatchSelector,
  local driverSince = 'max by (instance, job) (instance_interface:tunewatch_nic_driver_change:timestamp{%s})' % c.tunewatchSelector,
  local nicChecks = 'nic-.+|vmxnet3-.+|accelerated-networking',
  local booted = ' The host booted {{ with printf "tunewatch_boot_time_seconds{instance=%q,job=%q}" $labels.instance $labels.job | query }}{{ . | first | value | humanizeTimestamp }}{{ end }}.',
  local changedNics = ' Changed NICs now: {{ range $i, $n := printf "tunewatch_nic_info{instance=%q,job=%q} and on(instance, job, interface) instance_interface:tunewatch_nic_driver_change:timestamp" $labels.instance $labels.job | query }}{{ if $i }}; {{ end }}{{ $n.Labels.interface }}: driver {{ $n.Labels.driver }} {{ $n.Labels.version }}, firmware {{ $n.Labels.firmware }}{{ end }}.',

  prometheusAlerts+:: {
    groups+: [
      {
        name: 'tunewatch-checks',
        rules: [
          checkFailing('critical', c.checkFailingCritical),
          checkFailing('warning', c.checkFailingWarning),
          {
            // Per check, not per object: the description lists the objects.
            alert: 'TunewatchObjectErrors',
            expr: 'tunewatch_check_objects{%s, status="error"} > 0' % c.tunewatchSelector,
            'for': '15m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'tunewatch cannot evaluate {{ $labels.check }} on {{ $labels.instance }}',
              description: std.join(' ', [
                'Check {{ $labels.check }} on {{ $labels.instance }} has {{ $value }} object(s) in status error',
                '(a fact could not be read or the driver does not support the operation)' + objects('error') + '.',
                details,
              ]),
              runbook_url: runbook('tunewatchobjecterrors'),
            },
          },
        ],
      },
      {
        name: 'tunewatch-reversion',
        rules: [
          reverted('TuningRevertedAfterReboot', 'critical', c.checkFailingCritical, rebootSince, null, 'a reboot', 'a reboot of', booted),
          reverted('TuningRevertedAfterReboot', 'warning', c.checkFailingWarning, rebootSince, null, 'a reboot', 'a reboot of', booted),
          reverted('TuningRevertedAfterDriverUpdate', 'critical', c.checkFailingCritical, driverSince, nicChecks,
                   'a NIC driver or firmware change', 'a NIC driver update on', changedNics),
          reverted('TuningRevertedAfterDriverUpdate', 'warning', c.checkFailingWarning, driverSince, nicChecks,
                   'a NIC driver or firmware change', 'a NIC driver update on', changedNics),
          {
            // Runtime OK, boot-time configuration missing. Twins: `<id>` is persisted by
            // `<id>-persistent`, except that nic-settings-persistent persists nic-queue-count and
            // the vmxnet3-* ethtool settings, and nic-irq-affinity-persistent also nic-irq-spread.
            alert: 'TuningNotPersistent',
            expr: |||
              label_replace(
                label_replace(
                  label_replace(
                    tunewatch_check_status{%(sel)s, status="pass", check!~".+-persistent"} == 1,
                    "persistent_check", "$1-persistent", "check", "(.+)"
                  ),
                  "persistent_check", "nic-settings-persistent", "check", "nic-queue-count|vmxnet3-.+"
                ),
                "persistent_check", "nic-irq-affinity-persistent", "check", "nic-irq-spread"
              )
              and on(instance, job, persistent_check)
              label_replace(
                tunewatch_check_status{%(sel)s, status="fail", check=~".+-persistent"} == 1,
                "persistent_check", "$1", "check", "(.+)"
              )
            ||| % { sel: c.tunewatchSelector },
            'for': '30m',
            labels: { severity: 'warning' },
            annotations: {
              summary: '{{ $labels.check }} on {{ $labels.instance }} will be lost at the next reboot',
              description: std.join(' ', [
                '{{ $labels.check }} passes on {{ $labels.instance }}' + host + ' now, but {{ $labels.persistent_check }}',
                'fails: the setting is not configured to come back, so the next reboot (or driver reload) will undo it.',
                count('fail', 'not persisted', '$labels.persistent_check')
                + objects('fail', '$labels.persistent_check') + '.',
              ]),
              runbook_url: runbook('tuningnotpersistent'),
            },
          },
          {
            // Configured for the next boot, but nothing re-applies it when the device is
            // re-added (Azure host servicing re-adds the AN VF; modprobe -r/modprobe, a driver
            // update): a boot oneshot, rc.local, a dispatcher script keyed on the master.
            alert: 'TuningLostOnReadd',
            expr: |||
              tunewatch_check_objects_lost_on_readd{%(sel)s} > 0
              and on(instance, job, check)
              tunewatch_check_status{%(sel)s, status="pass"} == 1
            ||| % { sel: c.tunewatchSelector },
            'for': '30m',
            labels: { severity: 'warning' },
            annotations: {
              summary: '{{ $labels.check }} on {{ $labels.instance }}: tuned now, lost at the next servicing event',
              description: std.join(' ', [
                '{{ $labels.check }} passes on {{ $labels.instance }}' + host + ' (the tuning comes back at the next boot),',
                'but {{ $value }} object(s) would come back at driver defaults when their device is re-added without a',
                'reboot: Azure host servicing re-adds the Accelerated Networking VF, and a driver reload or update does',
                'the same. Nothing that runs on the device\'s add event re-applies them (a boot oneshot unit, rc.local,',
                'or a dispatcher script keyed on the hv_netvsc master does not).',
                details,
              ]),
              runbook_url: runbook('tuninglostonreadd'),
            },
          },
        ],
      },
      {
        name: 'tunewatch-exporter',
        rules: [
          {
            // A serve target, or a node_exporter target that published tunewatch results in
            // the last _config.resultsMemory. `for` rides out single failed scrapes.
            alert: 'TunewatchExporterDown',
            expr: |||
              up{%(serve)s} == 0
              or
              (up{%(sel)s} == 0 and on(instance, job) present_over_time(tunewatch_build_info{%(sel)s}[%(memory)s]))
            ||| % { serve: c.tunewatchServeSelector, sel: c.tunewatchSelector, memory: c.resultsMemory },
            'for': '5m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'tunewatch results of {{ $labels.instance }} cannot be scraped',
              description: std.join(' ', [
                'Prometheus could not scrape {{ $labels.instance }} (job {{ $labels.job }}) for 5 minutes:',
                'the tunewatch exporter, or the node_exporter that publishes its textfile, is down;',
                'tuning drift on this host is not observed.',
              ]),
              runbook_url: runbook('tunewatchexporterdown'),
            },
          },
          {
            alert: 'TunewatchExporterAbsent',
            expr: 'absent(tunewatch_build_info{%s})' % c.tunewatchSelector,
            'for': '15m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'No tunewatch results from any host',
              description: std.join(' ', [
                'Prometheus has no tunewatch series at all (selector ' + c.tunewatchSelector + '):',
                'service discovery or the scrape configuration lost every tunewatch exporter and textfile',
                'host, so no host\'s tuning is observed.',
              ]),
              runbook_url: runbook('tunewatchexporterabsent'),
            },
          },
          {
            // The target answers, but its tunewatch results are gone: textfile deleted or
            // unreadable (node_textfile_scrape_error), or a serve that lost its results.
            alert: 'TunewatchResultsMissing',
            expr: |||
              group by (instance, job) (present_over_time(tunewatch_build_info{%(sel)s}[%(memory)s]))
              unless on(instance, job) tunewatch_build_info{%(sel)s}
              and on(instance, job) up{%(sel)s} == 1
            ||| % { sel: c.tunewatchSelector, memory: c.resultsMemory },
            'for': '15m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'tunewatch results of {{ $labels.instance }} disappeared',
              description: std.join(' ', [
                '{{ $labels.instance }} (job {{ $labels.job }}) is scraped but no longer has tunewatch series:',
                'the textfile was removed or cannot be parsed, or tunewatch was uninstalled.',
              ]),
              runbook_url: runbook('tunewatchresultsmissing'),
            },
          },
          {
            // A rolled-out textfile host whose node_exporter answers but never published any
            // tunewatch series (within _config.resultsMemory): the timer never ran, the unit
            // fails (missing textfile directory, tunewatch not on the unit's PATH), or
            // node_exporter reads another directory. TunewatchResultsMissing covers results
            // that arrived once and went away.
            alert: 'TunewatchTextfileNeverArrived',
            expr: |||
              up{%(hosts)s} == 1
              unless on(instance, job) present_over_time(tunewatch_build_info{%(sel)s}[%(memory)s])
            ||| % { hosts: c.tunewatchTextfileHostSelector, sel: c.tunewatchSelector, memory: c.resultsMemory },
            'for': c.textfileArrivalFor,
            labels: { severity: 'warning' },
            annotations: {
              summary: 'tunewatch results never arrived from {{ $labels.instance }}',
              description: std.join(' ', [
                'node_exporter on {{ $labels.instance }} (job {{ $labels.job }}) answers, but no tunewatch',
                'series arrived through its textfile collector since ' + c.textfileArrivalFor + ': check',
                '`systemctl status tunewatch-textfile.service tunewatch-textfile.timer` on the host.',
              ]),
              runbook_url: runbook('tunewatchtextfileneverarrived'),
            },
          },
          {
            alert: 'TunewatchScanStale',
            expr: 'time() - tunewatch_last_scan_timestamp_seconds{%s} > %d' % [c.tunewatchSelector, c.staleScanSeconds],
            'for': '5m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'tunewatch results of {{ $labels.instance }} are stale',
              description: std.join(' ', [
                'The last completed tunewatch scan on {{ $labels.instance }} finished {{ $value | humanizeDuration }} ago',
                '(threshold %ds): the timer or the exporter\'s scans stopped, so the check results no longer describe the host.'
                % c.staleScanSeconds,
              ]),
              runbook_url: runbook('tunewatchscanstale'),
            },
          },
          {
            // The last scan failed for 15 minutes, or at least 3 scans failed within an hour.
            alert: 'TunewatchScanErrors',
            expr: |||
              (sum by (instance, job) (increase(tunewatch_scan_errors_total{%(sel)s}[1h])) > 2)
              or on(instance, job)
              (tunewatch_scan_success{%(sel)s} == 0)
            ||| % { sel: c.tunewatchSelector },
            'for': '15m',
            labels: { severity: 'warning' },
            annotations: {
              summary: 'tunewatch scans fail on {{ $labels.instance }}',
              description: std.join(' ', [
                'tunewatch scans on {{ $labels.instance }} raise or time out (last scan success:',
                '{{ with printf "tunewatch_scan_success{instance=%q,job=%q}" $labels.instance $labels.job | query }}{{ . | first | value }}{{ end }};',
                'failed scans in the last hour:',
                '{{ with printf "sum(increase(tunewatch_scan_errors_total{instance=%q,job=%q}[1h]))" $labels.instance $labels.job | query }}{{ . | first | value | printf "%.0f" }}{{ end }}).',
              ]),
              runbook_url: runbook('tunewatchscanerrors'),
            },
          },
        ],
      },
    ],
  },
}
