# pint (github.com/cloudflare/pint) configuration: the monitoring-mixins conventions for
# rules/*.rules.yml, which mixin/render.py renders from mixin/.
#   pint --offline lint rules/*.rules.yml       (no Prometheus needed)
# The test suite runs it (tests/rules/test_lint.py) and expects 0 findings.

parser {
  relaxed = []
}

# Alerts: Alertmanager routing severity is one of three fixed values, never templated
# (the check's own severity is the series label `check_severity`); every alert says what,
# why and where to read on; `for` rides out single scrapes and scans.
rule {
  match {
    kind = "alerting"
  }
  label "severity" {
    severity = "bug"
    value    = "(critical|warning|info)"
    required = true
  }
  annotation "summary" {
    severity = "bug"
    required = true
  }
  annotation "description" {
    severity = "bug"
    required = true
  }
  # a section of the runbook: the packaged docs/runbook.md (file:///usr/share/doc/tunewatch/,
  # mixin/config.libsonnet's default) or a site's own copy over https
  annotation "runbook_url" {
    severity = "bug"
    value    = "(file:///.+/runbook[.]md|https://.+)#.+"
    required = true
  }
  for {
    severity = "bug"
    min      = "1m"
  }
}

# Every aggregation keeps `job`, so a series can always be traced to its scrape job (and
# the serve and textfile routes never mix in one result).
rule {
  aggregate ".+" {
    severity = "bug"
    keep     = ["job"]
  }
}
