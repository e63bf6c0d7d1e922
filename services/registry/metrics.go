package registry

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/switchboard-run/switchboard/kit/suite/pins"
)

// collector reports what the registry's view holds at each scrape
// (docs/observability.md): every replica holds the whole view, so take
// the max across replicas, not the sum.
type collector struct {
	st                                *state
	clients, present, tools, ws, toks *prometheus.Desc
	changed                           *prometheus.Desc
}

func newCollector(st *state) collector {
	d := func(name, help string) *prometheus.Desc { return prometheus.NewDesc(name, help, nil, nil) }
	return collector{st: st,
		clients: d("switchboard_registry_clients", "Clients with a tool set in force."),
		present: d("switchboard_registry_hosts_present", "Clients present: holding a read of their queue on some mailbox replica."),
		tools:   d("switchboard_registry_tools", "Tools advertised, over every client."),
		ws:      d("switchboard_registry_workspaces", "Workspaces with at least one member client."),
		toks:    d("switchboard_registry_tokens", "API tokens on record."),
		changed: prometheus.NewDesc("switchboard_registry_tools_changed",
			"Tools whose definition differs from their pin, by workspace and state: changed (served, policy warn), held or rejected.",
			[]string{"workspace", "state"}, nil),
	}
}

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.clients, c.present, c.tools, c.ws, c.toks, c.changed} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	c.st.mu.Lock()
	clients, present, ws, toks := len(c.st.adverts), len(c.st.present), len(c.st.members), len(c.st.tokens)
	tools := 0
	for _, a := range c.st.adverts {
		tools += len(a.tools)
	}
	type key struct{ ws, state string }
	changed := map[key]int{}
	for ws, byClient := range c.st.pinned {
		for _, byTool := range byClient {
			for _, p := range byTool {
				changed[key{ws, pins.StateName(p.GetState())}]++
			}
		}
	}
	c.st.mu.Unlock()
	for k, n := range changed {
		ch <- prometheus.MustNewConstMetric(c.changed, prometheus.GaugeValue, float64(n), k.ws, k.state)
	}
	for d, v := range map[*prometheus.Desc]int{c.clients: clients, c.present: present, c.tools: tools, c.ws: ws, c.toks: toks} {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v))
	}
}
