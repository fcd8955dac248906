// Small Grafana JSON builders (no grafonnet dependency): every panel gets the templated
// data source, a description and a unit, as the dashboard-linter (monitoring-mixins
// conventions) requires.
local ds = { type: 'prometheus', uid: '${datasource}' };
{
  ds:: ds,
  // Every panel query filters on the job and instance variables.
  sel(extra=''):: 'job=~"$job", instance=~"$instance"' + (if extra == '' then '' else ', ' + extra),

  target(expr, ref='A', instant=false, format='time_series', legend=null):: {
    datasource: ds,
    expr: expr,
    refId: ref,
    instant: instant,
    range: !instant,
    format: format,
  } + (if legend == null then {} else { legendFormat: legend }),

  // Instant table targets A, B, C... from a list of expressions.
  tableTargets(exprs):: [
    $.target(exprs[i], std.char(65 + i), instant=true, format='table')
    for i in std.range(0, std.length(exprs) - 1)
  ],

  panel(type, title, description, unit, targets, grid, fieldConfig={}, options={}, extra={}):: {
    type: type,
    title: title,
    description: description,
    datasource: ds,
    targets: targets,
    gridPos: { x: grid[0], y: grid[1], w: grid[2], h: grid[3] },
    fieldConfig: { defaults: { unit: unit } + fieldConfig, overrides: [] },
    options: options,
  } + extra,

  row(title, y):: {
    type: 'row',
    title: title,
    collapsed: false,
    panels: [],
    gridPos: { x: 0, y: y, w: 24, h: 1 },
  },

  // A collapsed row holds its panels (Grafana's JSON model); they keep the positions they
  // take when it is expanded, counted from the row's own y (at, in the panels' grid).
  collapsedRow(title, y, at, panels):: $.row(title, y) {
    collapsed: true,
    panels: [p { gridPos+: { y: y + (p.gridPos.y - at) } } for p in panels],
  },

  stat(title, description, unit, expr, grid, thresholds=null, mappings=[]):: $.panel(
    'stat', title, description, unit, [$.target(expr, instant=true)], grid,
    fieldConfig={ mappings: mappings } + (if thresholds == null then {} else {
      thresholds: { mode: 'absolute', steps: thresholds },
      color: { mode: 'thresholds' },
    }),
    options={ reduceOptions: { calcs: ['lastNotNull'], fields: '', values: false }, colorMode: 'value',
              graphMode: 'none', textMode: 'auto', justifyMode: 'auto', orientation: 'auto' },
  ),

  timeseries(title, description, unit, targets, grid, min=null, max=null):: $.panel(
    'timeseries', title, description, unit, targets, grid,
    fieldConfig={ custom: { drawStyle: 'line', lineWidth: 1, fillOpacity: 10, showPoints: 'never' } }
                + (if min == null then {} else { min: min }) + (if max == null then {} else { max: max }),
    options={ legend: { displayMode: 'list', placement: 'bottom', showLegend: true },
              tooltip: { mode: 'multi', sort: 'none' } },
  ),

  bargauge(title, description, unit, targets, grid, min=0, max=null, thresholds=null):: $.panel(
    'bargauge', title, description, unit, targets, grid,
    fieldConfig={ min: min } + (if max == null then {} else { max: max })
                + (if thresholds == null then {} else { thresholds: { mode: 'absolute', steps: thresholds } }),
    options={ reduceOptions: { calcs: ['lastNotNull'], fields: '', values: false }, orientation: 'horizontal',
              displayMode: 'gradient', showUnfilled: true, valueMode: 'color' },
  ),

  // A table of instant queries merged on their common labels. `rename` maps "Value #B" etc.
  // to column names; `links` maps a column name to a data link URL; `units` a column to a unit.
  table(title, description, exprs, grid, rename={}, links={}, units={}, hide=[]):: $.panel(
    'table', title, description, 'none', $.tableTargets(exprs), grid,
    fieldConfig={ custom: { align: 'auto', cellOptions: { type: 'auto' }, filterable: true } },
    options={ showHeader: true, cellHeight: 'sm', footer: { show: false, reducer: ['sum'], fields: '' } },
    extra={
      transformations: [
        { id: 'merge', options: {} },
        { id: 'organize', options: {
          excludeByName: { Time: true, __name__: true } + { [h]: true for h in hide },
          indexByName: {},
          renameByName: rename,
        } },
      ],
    },
  ) + {
    fieldConfig+: {
      overrides: [
        { matcher: { id: 'byName', options: col },
          properties: [{ id: 'links', value: [{ title: links[col].title, url: links[col].url }] }] }
        for col in std.objectFields(links)
      ] + [
        { matcher: { id: 'byName', options: col }, properties: [{ id: 'unit', value: units[col] }] }
        for col in std.objectFields(units)
      ],
    },
  },

  statusColours:: {
    matcher: { id: 'byName', options: 'status' },
    properties: [
      { id: 'custom.cellOptions', value: { type: 'color-text' } },
      { id: 'mappings', value: [{ type: 'value', options: {
        pass: { color: 'green', index: 0 },
        fail: { color: 'red', index: 1 },
        'error': { color: 'orange', index: 2 },
        waived: { color: 'blue', index: 3 },
        notapplicable: { color: 'text', index: 4 },
      } }] },
    ],
  },

  variables(selector, hostDashboard=false):: [
    { type: 'datasource', name: 'datasource', label: 'Data source', query: 'prometheus', current: {}, hide: 0,
      refresh: 1, regex: '', includeAll: false, multi: false, options: [], skipUrlSync: false },
    $.queryVariable('job', 'Job', 'label_values(tunewatch_build_info{%s}, job)' % selector, multi=true),
    // The host dashboard shows one host: single-select, no All, the first host by default
    // (Grafana selects the first option when none is current).
    $.queryVariable('instance', 'Instance', 'label_values(tunewatch_build_info{job=~"$job"}, instance)',
                    multi=!hostDashboard),
    $.queryVariable('profile', 'Profile',
                    'label_values(tunewatch_check_status{job=~"$job", instance=~"$instance"}, profile)', multi=true),
  ],

  queryVariable(name, label, query, multi):: {
    type: 'query',
    name: name,
    label: label,
    datasource: ds,
    definition: query,
    query: { query: query, refId: 'PrometheusVariableQueryEditor-VariableQuery' },
    refresh: 2,  // on time range change
    regex: '',
    sort: 1,
    current: {},
    options: [],
    hide: 0,
    multi: multi,
    includeAll: multi,
    skipUrlSync: false,
  } + (if multi then { allValue: '.+' } else {}),

  annotations(selector):: [
    { builtIn: 1, datasource: { type: 'grafana', uid: '-- Grafana --' }, enable: true, hide: true,
      iconColor: 'rgba(0, 211, 255, 1)', name: 'Annotations & Alerts', type: 'dashboard' },
    { name: 'Reboots', enable: true, hide: false, iconColor: 'orange', datasource: ds,
      expr: 'changes(tunewatch_boot_time_seconds{job=~"$job", instance=~"$instance"}[10m]) > 0',
      step: '5m', titleFormat: 'Reboot', textFormat: '{{instance}} rebooted (boot time changed)',
      tagKeys: 'instance', useValueForTime: false },
    { name: 'NIC driver/firmware changes', enable: true, hide: false, iconColor: 'purple', datasource: ds,
      expr: |||
        (tunewatch_nic_info{job=~"$job", instance=~"$instance"} unless tunewatch_nic_info{job=~"$job", instance=~"$instance"} offset 10m)
        and on(instance, job, interface)
        (count by (instance, job, interface) (count_over_time(tunewatch_nic_info{job=~"$job", instance=~"$instance"}[20m])) > 1)
      |||,
      step: '5m', titleFormat: 'NIC driver/firmware change',
      textFormat: '{{instance}} {{interface}}: {{driver}} {{version}}, firmware {{firmware}}',
      tagKeys: 'instance,interface', useValueForTime: false },
  ],

  // Numbers panels top to bottom: ids are their position, as Grafana would assign them.
  dashboard(c, uid, title, description, panels):: {
    uid: uid,
    title: title,
    description: description,
    tags: c.dashboardTags,
    timezone: c.dashboardTimezone,
    refresh: c.dashboardRefresh,
    editable: false,
    graphTooltip: 1,
    schemaVersion: 39,
    version: 1,
    fiscalYearStartMonth: 0,
    weekStart: '',
    time: { from: 'now-24h', to: 'now' },
    timepicker: {},
    links: [{ type: 'dashboards', tags: c.dashboardTags, title: 'tunewatch', asDropdown: true, includeVars: true,
              keepTime: true, icon: 'external link', targetBlank: false, tooltip: '', url: '' }],
    annotations: { list: $.annotations(c.tunewatchSelector) },
    templating: { list: $.variables(c.tunewatchSelector, hostDashboard=uid == c.hostDashboardUID) },
    // ids top to bottom, the panels inside collapsed rows included
    panels: std.foldl(function(acc, p)
      local n = acc.n + 1;
      local kids = if p.type == 'row' then p.panels else [];
      { n: n + std.length(kids),
        out: acc.out + [if p.type == 'row' then p { id: n, panels: std.mapWithIndex(function(i, k) k { id: n + 1 + i }, kids) }
                        else p { id: n }] }, panels, { n: 0, out: [] }).out,
  },
}
