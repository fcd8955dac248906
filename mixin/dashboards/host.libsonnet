// One host in detail (the instance variable is single-select). The top rows use the default
// series; the "Detail" rows need `--metrics.detail` on the host (docs/metrics.md), are empty
// without it, and are collapsed so that the dashboard opens on what every host exports.
local g = import 'lib.libsonnet';
local s = g.sel;
local sp = function(extra='') s('profile=~"$profile"' + (if extra == '' then '' else ', ' + extra));
local detail = ' Needs --metrics.detail on the host (per-object, per-IRQ and per-setting series).';
local obsExp(setting) = [
  'tunewatch_setting_observed{%s}' % s(setting),
  'tunewatch_setting_expected{%s}' % s(setting),
];

{
  local c = $._config,
  local runbookLink = { title: 'Runbook: ${__value.raw}', url: c.runbookURLBase + '#${__value.raw}' },

  grafanaDashboards+:: {
    'tunewatch-host.json': g.dashboard(c, c.hostDashboardUID, 'tunewatch / Host tuning detail',
      'One host: check states, NIC queues and IRQ placement per NUMA node, and with --metrics.detail every object, IRQ and numeric setting.',
      [
        g.row('Summary', 0),
        g.stat('Compliant', '1 when no selected check fails or errors.', 'none',
               'tunewatch_host_compliant{%s}' % sp(), [0, 1, 4, 4],
               thresholds=[{ color: 'red', value: null }, { color: 'green', value: 1 }],
               mappings=[{ type: 'value', options: { '0': { text: 'no', index: 0 }, '1': { text: 'yes', index: 1 } } }]),
        g.stat('Failing checks', 'Number of selected checks in status fail.', 'none',
               'sum(tunewatch_check_status{%s})' % sp('status="fail"'), [4, 1, 4, 4],
               thresholds=[{ color: 'green', value: null }, { color: 'red', value: 1 }]),
        g.stat('Uptime', 'Time since the host booted (boot time from /proc/stat).', 's',
               'time() - tunewatch_boot_time_seconds{%s}' % s(), [8, 1, 4, 4]),
        g.stat('Last scan age', 'Time since the last completed scan finished.', 's',
               'time() - tunewatch_last_scan_timestamp_seconds{%s}' % s(), [12, 1, 4, 4],
               thresholds=[{ color: 'green', value: null }, { color: 'orange', value: c.staleScanSeconds }]),
        g.stat('Scan duration', 'Duration of the last completed scan.', 's',
               'tunewatch_scan_duration_seconds{%s}' % s(), [16, 1, 4, 4]),
        g.stat('Last scan', 'Whether the last scan attempt completed (serve: 0 when it raised or timed out).', 'none',
               'tunewatch_scan_success{%s}' % s(), [20, 1, 4, 4],
               thresholds=[{ color: 'red', value: null }, { color: 'green', value: 1 }],
               mappings=[{ type: 'value', options: { '0': { text: 'failed', index: 0 }, '1': { text: 'ok', index: 1 } } }]),
        g.table('Host', 'Host identity, tunewatch build and loaded content.',
                ['tunewatch_host_info{%s}' % s(), 'tunewatch_build_info{%s}' % s(), 'tunewatch_content_info{%s}' % s()],
                [0, 5, 12, 5], hide=['Value #A', 'Value #B', 'Value #C']),
        g.table('NIC drivers', 'Driver, version, firmware and bus of each in-scope NIC; a change is annotated.',
                ['tunewatch_nic_info{%s}' % s()], [12, 5, 12, 5], hide=['Value #A']),

        g.row('Checks', 10),
        g.panel('state-timeline', 'Check states', 'Status of every selected check over time.', 'none',
                [g.target(|||
                  max by (instance, check) (
                      tunewatch_check_status{%(f)s} * 4
                    or tunewatch_check_status{%(e)s} * 3
                    or tunewatch_check_status{%(w)s} * 2
                    or tunewatch_check_status{%(p)s}
                    or tunewatch_check_status{%(n)s} * 0
                  )
                ||| % { f: sp('status="fail"'), e: sp('status="error"'), w: sp('status="waived"'),
                        p: sp('status="pass"'), n: sp('status="notapplicable"') }, legend='{{check}}')],
                [0, 11, 24, 10],
                fieldConfig={
                  mappings: [{ type: 'value', options: {
                    '0': { text: 'notapplicable', color: 'text', index: 0 },
                    '1': { text: 'pass', color: 'green', index: 1 },
                    '2': { text: 'waived', color: 'blue', index: 2 },
                    '3': { text: 'error', color: 'orange', index: 3 },
                    '4': { text: 'fail', color: 'red', index: 4 },
                  } }],
                  color: { mode: 'thresholds' },
                  thresholds: { mode: 'absolute', steps: [{ color: 'text', value: null }] },
                  custom: { fillOpacity: 80, lineWidth: 0 },
                },
                options={ showValue: 'never', mergeValues: true, rowHeight: 0.9, alignValue: 'left',
                          legend: { displayMode: 'list', placement: 'bottom', showLegend: false },
                          tooltip: { mode: 'single', sort: 'none' } }),
        g.table('Checks now', 'Current status of each selected check with its failing, erroring and waived object counts. Click a check for its runbook section.',
                ['tunewatch_check_status{%s} == 1' % sp(),
                 'sum by (job, instance, check) (tunewatch_check_objects{%s})' % s('status=~"fail|error|waived"')],
                [0, 21, 18, 8], rename={ 'Value #B': 'objects failing/erroring/waived' }, hide=['Value #A'],
                links={ check: runbookLink }) + { fieldConfig+: { overrides+: [g.statusColours] } },

        g.bargauge('Lost on a re-add', 'Objects of each check that a re-add of their device would leave at driver defaults (an Azure VF re-added during host servicing, a driver reload or update): tuned now and at the next boot, but nothing re-applies them on the device\'s add event. Alert TuningLostOnReadd.', 'none',
                   [g.target('tunewatch_check_objects_lost_on_readd{%s}' % s(), legend='{{check}}')], [18, 21, 6, 8],
                   thresholds=[{ color: 'green', value: null }, { color: 'orange', value: 1 }]),

        g.row('NUMA nodes and IRQ placement', 29),
        g.bargauge('CPUs per NUMA node', 'Online logical CPUs of each NUMA node: the most queues a NIC on that node should use.', 'none',
                   [g.target('tunewatch_numa_node_cpus{%s}' % s(), instant=true, legend='node {{node}}')], [0, 30, 12, 8]),
        g.bargauge('Data IRQs per NUMA node', 'Data IRQs of each NIC whose smp_affinity_list lies within one NUMA node ("multiple": spans nodes).', 'none',
                   [g.target('tunewatch_nic_data_irqs{%s}' % s(), instant=true, legend='{{interface}} node {{node}}')],
                   [12, 30, 12, 8]),

        g.collapsedRow('Detail, needs --metrics.detail on the host: objects, queues and IRQs', 38, 38, [
        g.table('Objects', 'Status of every evaluated object; expected and actual values are in the JSON report.' + detail,
                ['tunewatch_object_status{%s}' % s()], [0, 39, 24, 9], hide=['Value #A'], links={ check: runbookLink })
        + { fieldConfig+: { overrides+: [g.statusColours] } },
        g.bargauge('Queues vs limit', 'Combined (or rx) channels of each NIC against its limit.' + detail, 'none',
                   [g.target('tunewatch_setting_observed{%s}' % s('setting=~"channels[.](combined|rx)"'), 'A', true, legend='{{object}} queues'),
                    g.target('tunewatch_setting_expected{%s}' % s('setting="channels.limit"'), 'B', true, legend='{{object}} limit')],
                   [0, 48, 8, 8]),
        g.table('IRQ-to-CPU placement', 'First CPU and number of CPUs of each data IRQ.' + detail,
                ['tunewatch_irq_affinity_first_cpu{%s}' % s(), 'tunewatch_irq_affinity_cpus{%s}' % s()],
                [8, 48, 8, 8], rename={ 'Value #A': 'first CPU', 'Value #B': 'CPUs' }),
        g.timeseries('IRQ placement over time', 'First CPU of each data IRQ over time: a jump is a re-pinning.' + detail, 'none',
                     [g.target('tunewatch_irq_affinity_first_cpu{%s}' % s(), legend='{{interface}} irq {{irq}}')],
                     [16, 48, 8, 8], min=0),

        ]),
        g.collapsedRow('Detail, needs --metrics.detail on the host: NIC rings and coalescing', 39, 56, [
        g.table('Settings: observed vs expected', 'Ring sizes (descriptors) and rx-usecs (microseconds) observed and required.' + detail,
                obsExp('setting=~"(rings|coalesce)[.].+"'), [0, 57, 12, 8],
                rename={ 'Value #A': 'observed', 'Value #B': 'expected' }),
        g.timeseries('rx-usecs and rings over time', 'Observed ring sizes and rx-usecs, with the required values.' + detail, 'none',
                     [g.target(obsExp('setting=~"(rings|coalesce)[.].+"')[0], 'A', legend='{{object}} {{setting}}'),
                      g.target(obsExp('setting=~"(rings|coalesce)[.].+"')[1], 'B', legend='{{object}} {{setting}} expected')],
                     [12, 57, 12, 8], min=0),

        ]),
        g.collapsedRow('Detail, needs --metrics.detail on the host: NFS and sysctls', 40, 65, [
        g.table('NFS objects', 'Status of each NFS mount per NFS check.' + detail,
                ['tunewatch_object_status{%s}' % s('check=~"nfs-.+"')], [0, 66, 24, 8], hide=['Value #A'],
                links={ check: runbookLink }) + { fieldConfig+: { overrides+: [g.statusColours] } },
        g.bargauge('NFS read-ahead', 'read_ahead_kb of each NFS mount\'s backing device (KiB).' + detail, 'kbytes',
                   [g.target(obsExp('setting="read_ahead_kb"')[0], 'A', true, legend='{{object}}'),
                    g.target(obsExp('setting="read_ahead_kb"')[1], 'B', true, legend='{{object}} expected')],
                   [0, 74, 8, 8]),
        g.table('sunrpc slot tables and nconnect', 'sunrpc TCP slot table entries and nconnect per mount (counts).' + detail,
                obsExp('setting=~"sunrpc[.].+|nconnect"'), [8, 74, 8, 8],
                rename={ 'Value #A': 'observed', 'Value #B': 'expected' }),
        g.table('Dirty page settings', 'vm.dirty_* in the unit their name says (bytes, centisecs, ratio).' + detail,
                obsExp('setting=~"vm[.]dirty_.+"'), [16, 74, 8, 8],
                rename={ 'Value #A': 'observed', 'Value #B': 'expected' }),
        g.timeseries('sysctl drift', 'sunrpc and dirty-page sysctls over time, with the required values.' + detail, 'short',
                     [g.target(obsExp('setting=~"sunrpc[.].+|vm[.]dirty_.+"')[0], 'A', legend='{{setting}}'),
                      g.target(obsExp('setting=~"sunrpc[.].+|vm[.]dirty_.+"')[1], 'B', legend='{{setting}} expected')],
                     [0, 82, 24, 7]),
        ]),
      ]),
  },
}
