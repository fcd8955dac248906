// Fleet overview: default (non-detail) series only, so it works for every host.
local g = import 'lib.libsonnet';
local s = g.sel;
local sp = function(extra='') s('profile=~"$profile"' + (if extra == '' then '' else ', ' + extra));
// "Not reporting" and "reverted" are computed here from the scraped series (and, for
// reversions, the pass-history recording rule of rules/tunewatch-recording.rules.yml), not
// from ALERTS: they must not read 0 where the alerting rules are not loaded, nor lag by `for`.
local ratio(by) =
  'sum by (%(by)s) (tunewatch_check_status{%(a)s})\n/\n(sum by (%(by)s) (tunewatch_check_status{%(b)s}) > 0)'
  % { by: by, a: sp('status=~"pass|waived"'), b: sp('status!="notapplicable"') };

{
  local c = $._config,
  local hostLink = {
    title: 'Host tuning detail',
    url: '/d/' + c.hostDashboardUID + '/tunewatch-host?var-datasource=${datasource}&var-job=${__data.fields.job}'
         + '&var-instance=${__value.raw}&${__url_time_range}',
  },
  local runbookLink = { title: 'Runbook: ${__value.raw}', url: c.runbookURLBase + '#${__value.raw}' },

  // Down (serve targets always; other targets while they had results), results gone, stale:
  // one row per target, whatever the number of reasons.
  local notReporting = |||
    group by (instance, job) (
        up{%(serve)s, instance=~"$instance"} == 0
      or
        (up{%(s)s} == 0 and on(instance, job) group by (instance, job) (present_over_time(tunewatch_build_info{%(s)s}[%(mem)s])))
      or
        (group by (instance, job) (present_over_time(tunewatch_build_info{%(s)s}[%(mem)s])) unless on(instance, job) tunewatch_build_info{%(s)s})
      or
        (time() - tunewatch_last_scan_timestamp_seconds{%(s)s} > %(stale)d)
    )
  ||| % { serve: c.tunewatchServeSelector + ', job=~"$job"', s: s(), mem: c.resultsMemory, stale: c.staleScanSeconds },
  // The reversion alerts' conditions (without `for`), each row labelled with its reason.
  local since(what) = |||
    (tunewatch_check_status{%(sp)s, status="fail", check!~".+-persistent"%(checks)s} == 1)
    and on(instance, job, check)
    (
        max_over_time(instance_check:tunewatch_check_pass:timestamp{%(s)s}[%(hist)s])
      - on(instance, job) group_left()
        %(since)s
      < 0 > -%(window)d
    )
  |||,
  local rebootSince = 'tunewatch_boot_time_seconds{%s}' % s(),
  local driverSince = 'max by (instance, job) (instance_interface:tunewatch_nic_driver_change:timestamp{%s})' % s(),
  local reason(expr, text) = 'label_replace(%s, "reason", "%s", "", "")' % [expr, text],
  local reverted = std.join('\nor
', [
    reason(since('reboot') % { sp: sp(), s: s(), checks: '', hist: c.reversionHistory, since: rebootSince,
                               window: c.reversionWindowSeconds }, 'reverted after a reboot'),
    reason(since('driver') % { sp: sp(), s: s(), checks: ', check=~"nic-.+|vmxnet3-.+|accelerated-networking"',
                               hist: c.reversionHistory, since: driverSince, window: c.reversionWindowSeconds },
           'reverted after a NIC driver change'),
    reason(|||
      label_replace(
        label_replace(
          label_replace(
            tunewatch_check_status{%(sp)s, status="pass", check!~".+-persistent"} == 1,
            "persistent_check", "$1-persistent", "check", "(.+)"
          ),
          "persistent_check", "nic-settings-persistent", "check", "nic-queue-count|vmxnet3-.+"
        ),
        "persistent_check", "nic-irq-affinity-persistent", "check", "nic-irq-spread"
      )
      and on(instance, job, persistent_check)
      label_replace(
        tunewatch_check_status{%(sp)s, status="fail", check=~".+-persistent"} == 1,
        "persistent_check", "$1", "check", "(.+)"
      )
    ||| % { sp: sp() }, 'not configured for boot'),
  ]),

  grafanaDashboards+:: {
    'tunewatch-fleet.json': g.dashboard(c, c.fleetDashboardUID, 'tunewatch / Fleet tuning compliance',
      'Tuning compliance across hosts (tunewatch serve and node_exporter textfile hosts alike). Click a host to open its detail, a check to open its runbook section.',
      [
        g.row('Fleet', 0),
        g.stat('Hosts reporting', 'Hosts reporting tunewatch results (job, instance and profile filters apply).', 'none',
               'count(tunewatch_host_compliant{%s})' % sp(), [0, 1, 4, 4]),
        g.stat('Compliant hosts', 'Hosts where no selected check fails or errors.', 'none',
               'sum(tunewatch_host_compliant{%s})' % sp(), [4, 1, 4, 4]),
        g.stat('Fleet compliance', 'Share of hosts that are compliant.', 'percentunit',
               'avg(tunewatch_host_compliant{%s})' % sp(), [8, 1, 4, 4],
               thresholds=[{ color: 'red', value: null }, { color: 'orange', value: 0.8 }, { color: 'green', value: 1 }]),
        g.stat('Failing (host, check) pairs', 'Number of checks failing, summed over hosts.', 'none',
               'sum(tunewatch_check_status{%s})' % sp('status="fail"'), [12, 1, 4, 4],
               thresholds=[{ color: 'green', value: null }, { color: 'red', value: 1 }]),
        g.stat('Hosts not reporting', 'Hosts whose tuning is not observed now: target down (a tunewatch serve target, or a textfile host that had results in the last %s), scraped but without tunewatch results, or last scan older than %d s. From the scraped series; no alerting rules needed.' % [c.resultsMemory, c.staleScanSeconds], 'none',
               'count(%s) or vector(0)' % notReporting, [16, 1, 4, 4],
               thresholds=[{ color: 'green', value: null }, { color: 'orange', value: 1 }]),
        g.stat('Settings reverted / at risk', 'Checks that passed until a reboot or NIC driver change and fail since, plus runtime settings not configured for boot. Needs the recording rules (rules/tunewatch-recording.rules.yml), not the alerting rules.', 'none',
               'count(%s) or vector(0)' % reverted, [20, 1, 4, 4],
               thresholds=[{ color: 'green', value: null }, { color: 'red', value: 1 }]),

        g.row('Compliance', 5),
        g.bargauge('Compliance by check', 'Share of the selected hosts where the check applies that pass or waive it.',
                   'percentunit', [g.target(ratio('check'), instant=true, legend='{{check}}')], [0, 6, 8, 10], max=1,
                   thresholds=[{ color: 'red', value: null }, { color: 'orange', value: 0.8 }, { color: 'green', value: 1 }]),
        g.bargauge('Compliance by host', 'Share of the applicable checks a host passes or waives.', 'percentunit',
                   [g.target(ratio('job, instance'), instant=true, legend='{{instance}}')], [8, 6, 8, 10], max=1,
                   thresholds=[{ color: 'red', value: null }, { color: 'orange', value: 0.8 }, { color: 'green', value: 1 }]),
        g.timeseries('Compliance by profile', 'Share of compliant hosts per profile over time.', 'percentunit',
                     [g.target('avg by (profile) (tunewatch_host_compliant{%s})' % sp(), legend='{{profile}}')],
                     [16, 6, 8, 10], min=0, max=1),
        g.panel('state-timeline', 'Host compliance over time',
                'tunewatch_host_compliant per host; reboots and NIC driver changes are annotated.', 'none',
                [g.target('tunewatch_host_compliant{%s}' % sp(), legend='{{instance}}')], [0, 16, 12, 8],
                fieldConfig={
                  mappings: [{ type: 'value', options: { '0': { text: 'non-compliant', color: 'red', index: 0 },
                                                        '1': { text: 'compliant', color: 'green', index: 1 } } }],
                  color: { mode: 'thresholds' },
                  thresholds: { mode: 'absolute', steps: [{ color: 'text', value: null }] },
                  custom: { fillOpacity: 80, lineWidth: 0 },
                },
                options={ showValue: 'never', mergeValues: true, rowHeight: 0.9, alignValue: 'left',
                          legend: { displayMode: 'list', placement: 'bottom', showLegend: true },
                          tooltip: { mode: 'single', sort: 'none' } }),
        g.timeseries('Failing checks by check severity', 'Failing (host, check) pairs by the check\'s own severity (high, medium, low).',
                     'none', [g.target('sum by (check_severity) (tunewatch_check_status{%s})' % sp('status="fail"'),
                                       legend='{{check_severity}}')], [12, 16, 12, 8], min=0),

        g.row('Failures and reversions', 24),
        g.table('Failing checks',
                'Checks failing or erroring now, with the number of their failing or erroring objects. Click the instance for the host dashboard, the check for its runbook section.',
                ['tunewatch_check_status{%s} == 1' % sp('status=~"fail|error"'),
                 'sum by (job, instance, check) (tunewatch_check_objects{%s})' % s('status=~"fail|error"')],
                [0, 25, 14, 9], rename={ 'Value #B': 'objects failing/erroring' }, hide=['Value #A'],
                links={ instance: hostLink, check: runbookLink }) + { fieldConfig+: { overrides+: [g.statusColours] } },
        g.table('Hosts whose settings reverted',
                'Per host and check: reverted after a reboot, reverted after a NIC driver or firmware change, or passing now but not configured for boot (persistent_check fails). Click the check for its runbook section.',
                ['max by (job, instance, check, reason, persistent_check) (%s)' % reverted],
                [14, 25, 10, 9], hide=['Value #A'], links={ instance: hostLink, check: runbookLink }),

        g.row('Hosts', 34),
        g.table('Hosts', 'Inventory: platform, kernel, uptime, scan freshness, failing checks. Click the instance for the host dashboard.',
                ['tunewatch_host_info{%s}' % s(),
                 'time() - tunewatch_boot_time_seconds{%s}' % s(),
                 'time() - tunewatch_last_scan_timestamp_seconds{%s}' % s(),
                 'sum by (job, instance) (tunewatch_check_status{%s})' % sp('status="fail"')],
                [0, 35, 16, 8], rename={ 'Value #B': 'uptime', 'Value #C': 'last scan age', 'Value #D': 'failing checks' },
                hide=['Value #A'], links={ instance: hostLink }, units={ uptime: 's', 'last scan age': 's' }),
        g.bargauge('Reboots in the time range', 'Number of boot time changes per host in the dashboard time range.', 'none',
                   [g.target('changes(tunewatch_boot_time_seconds{%s}[$__range])' % s(), instant=true, legend='{{instance}}')],
                   [16, 35, 8, 8]),
      ]),
  },
}
