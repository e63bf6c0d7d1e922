package deploy

import (
	"maps"
	"slices"
)

// DashboardMetrics are the series names deploy/grafana/dashboards queries,
// as a scrape of /metrics shows them (a histogram as its _bucket series).
// The deploy tests hold the dashboard to this list both ways; a test of a
// running suite holds the list to what the services export, so a renamed
// metric cannot leave a panel empty unnoticed (docs/design.md §9).
var DashboardMetrics = slices.Sorted(maps.Keys(DashboardLabels))

// DashboardLabels are the labels the dashboard groups or filters each
// metric by, beyond those Prometheus adds (job, instance) and a
// histogram's le: a scrape must show each on its metric.
var DashboardLabels = map[string][]string{
	"go_goroutines":                           {},
	"grpc_client_handled_total":               {"grpc_code", "grpc_method", "grpc_service"},
	"grpc_server_handled_total":               {"grpc_code", "grpc_method", "grpc_service"},
	"grpc_server_handling_seconds_bucket":     {"grpc_method", "grpc_service"},
	"process_resident_memory_bytes":           {},
	"switchboard_bridge_restarts_total":       {"server"},
	"switchboard_bridge_servers":              {"state"},
	"switchboard_http_request_seconds_bucket": {"route"},
	"switchboard_http_requests_total":         {"code", "route"},
	"switchboard_invocation_seconds_bucket":   {"workspace"},
	"switchboard_invocations_total":           {"outcome", "workspace"},
	"switchboard_mailbox_reads_open":          {},
	"switchboard_mailbox_queue_depth":         {"client"},
	"switchboard_mcp_request_seconds_bucket":  {"method", "side"},
	"switchboard_mcp_requests_total":          {"method", "outcome", "side"},
	"switchboard_bridge_faults_total":         {"server"},
	"switchboard_registry_clients":            {},
	"switchboard_registry_hosts_present":      {},
}
