// Fleet overview: default (non-detail) series only, so it works for every host.
local g = import 'lib.libsonnet';
local s = g.sel;
local sp = function(extra='') s('profile=~"$profile"' + (if extra == '' then '' else ', ' + extra));
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
        g.stat('Hosts not reporting', 'Firing TunewatchExporterDown, TunewatchResultsMissing and TunewatchScanStale alerts: hosts whose tuning is not observed.', 'none',
               'count(ALERTS{%s, alertname=~"TunewatchExporterDown|TunewatchResultsMissing|TunewatchScanStale", alertstate="firing"}) or vector(0)' % s(),
               [16, 1, 4, 4], thresholds=[{ color: 'green', value: null }, { color: 'orange', value: 1 }]),
        g.stat('Settings reverted / at risk', 'Firing reversion (after reboot or driver update) and not-persistent alerts.', 'none',
               'count(ALERTS{%s, alertname=~"TuningRevertedAfter.+|TuningNotPersistent", alertstate="firing"}) or vector(0)' % s(),
               [20, 1, 4, 4], thresholds=[{ color: 'green', value: null }, { color: 'red', value: 1 }]),

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
                'Firing and pending reversion and not-persistent alerts, per host and check. Click the check for its runbook section.',
                ['max by (job, instance, alertname, alertstate, check, persistent_check) (ALERTS{%s, alertname=~"TuningRevertedAfter.+|TuningNotPersistent"})' % s()],
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
