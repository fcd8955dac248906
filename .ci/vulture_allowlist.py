"""Names vulture (at 60% confidence) reports as unused that are used where it cannot see:
.ci/test passes this file with the package. Each entry says who uses it; anything else it
reports is dead code to remove (docs/architecture.md, gates)."""

# ruff: noqa: F821, B018 - vulture reads the names; this file never runs
_.cmd_checks  # cli/main.py calls the describing commands by name: getattr(cli.info, name)
_.cmd_profiles
_.cmd_validate
_.cmd_paths
_.cmd_completion
_.rejected_total  # web/server.py counters, read by serve/exporter.py through getattr(server, attr)
_.accept_errors_total
_.evicted_total
_.refused_total
_.whitespace_split  # shlex.shlex option, read by shlex itself
_.sysfs_device  # facts/udev_device.py: the udev tests build devices with it
_.parse_interrupts  # parsers: the whole-text forms of the streaming parsers, for tests/parsers
_.parse_udev_rules
_.make_renderer  # outputs/prometheus.py: the /metrics renderer tests/rules and benchmarks serve
_.last_pid  # serve/scanjob.py: the scan child's pid, for tests/exporter/test_scan_isolation.py
_.running_pid
_.wait_first_scan  # serve/scanloop.py: tests/exporter wait for the first scan with it
_.server_address  # web/server.py: the bound port, for tests that listen on :0
_.match_string  # facts/udev_match.py: the reference tests/udev/test_udev_compiled_match.py holds compile_match to
_.optionxform  # configparser option (parsers/tuned_conf.py keeps key case), read by configparser itself
