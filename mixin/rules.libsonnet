// Recording rules: host and fleet roll-ups (every aggregation keeps `job`) and the history
// series the reversion alerts need. Compliance counts pass and waived as compliant and
// ignores notapplicable; ratios only where the denominator is > 0 (no NaN series).
{
  local c = $._config,
  local s = c.tunewatchSelector,
  local rec(record, expr) = { record: record, expr: expr },

  prometheusRules+:: {
    groups+: [
      {
        name: 'tunewatch-recording-host',
        rules: [
          rec('instance:tunewatch_checks_failing:count',
              'sum by (instance, job, profile) (tunewatch_check_status{%s, status="fail"})' % s),
          rec('instance:tunewatch_checks_erroring:count',
              'sum by (instance, job, profile) (tunewatch_check_status{%s, status="error"})' % s),
          rec('instance:tunewatch_checks_applicable:count',
              'sum by (instance, job, profile) (tunewatch_check_status{%s, status!="notapplicable"})' % s),
          rec('instance:tunewatch_compliance:ratio', |||
            sum by (instance, job, profile) (tunewatch_check_status{%(s)s, status=~"pass|waived"})
            /
            (sum by (instance, job, profile) (tunewatch_check_status{%(s)s, status!="notapplicable"}) > 0)
          ||| % { s: s }),
        ],
      },
      {
        name: 'tunewatch-recording-fleet',
        rules: [
          rec('check:tunewatch_hosts_failing:count',
              'sum by (job, check) (tunewatch_check_status{%s, status="fail"})' % s),
          rec('check:tunewatch_hosts_applicable:count',
              'sum by (job, check) (tunewatch_check_status{%s, status!="notapplicable"})' % s),
          rec('check:tunewatch_compliance:ratio', |||
            sum by (job, check) (tunewatch_check_status{%(s)s, status=~"pass|waived"})
            /
            (sum by (job, check) (tunewatch_check_status{%(s)s, status!="notapplicable"}) > 0)
          ||| % { s: s }),
          rec('profile_check:tunewatch_compliance:ratio', |||
            sum by (job, profile, check) (tunewatch_check_status{%(s)s, status=~"pass|waived"})
            /
            (sum by (job, profile, check) (tunewatch_check_status{%(s)s, status!="notapplicable"}) > 0)
          ||| % { s: s }),
          rec('check_severity:tunewatch_checks_failing:count',
              'sum by (job, check_severity) (tunewatch_check_status{%s, status="fail"})' % s),
          rec('profile:tunewatch_hosts:count', 'count by (job, profile) (tunewatch_host_compliant{%s})' % s),
          rec('profile:tunewatch_hosts_compliant:count', 'sum by (job, profile) (tunewatch_host_compliant{%s})' % s),
          rec('profile:tunewatch_compliance:ratio', 'avg by (job, profile) (tunewatch_host_compliant{%s})' % s),
        ],
      },
      {
        // timestamp() of a plain selector is the scrape time of the sample, not the evaluation
        // time, so a pass still visible through the 5m lookback after a fast reboot is not
        // mistaken for a pass after the boot.
        name: 'tunewatch-recording-history',
        rules: [
          rec('instance_check:tunewatch_check_pass:timestamp', |||
            timestamp(tunewatch_check_status{%(s)s, status="pass"})
            and
            (tunewatch_check_status{%(s)s, status="pass"} == 1)
          ||| % { s: s }),
          rec('instance_interface:tunewatch_nic_info:timestamp', 'timestamp(tunewatch_nic_info{%s})' % s),
          // Interfaces whose driver, version, firmware or bus changed within the history
          // window: the first scrape time of the combination seen now.
          rec('instance_interface:tunewatch_nic_driver_change:timestamp', |||
            (min_over_time(instance_interface:tunewatch_nic_info:timestamp{%(s)s}[%(h)s]) and tunewatch_nic_info{%(s)s})
            and on(instance, job, interface)
            (count by (instance, job, interface) (count_over_time(tunewatch_nic_info{%(s)s}[%(h)s])) > 1)
          ||| % { s: s, h: c.reversionHistory }),
        ],
      },
    ],
  },
}
