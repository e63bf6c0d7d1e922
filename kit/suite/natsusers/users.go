// Package natsusers is who may connect to the suite's NATS, and with which
// subjects (docs/security.md, "NATS"): the one table of the suite's NATS
// users, and the expansion of a row into NATS permissions. A user is a
// suite service known by its certificate (CN=<name>, OU=service); NATS
// maps the certificate a client presents to its row (verify_and_map), and
// refuses every certificate no row names — a host's, a driver's, an
// admin's, Prometheus's.
package natsusers

// User is one row: a service's NATS identity and the least it needs.
type User struct {
	// Name is the service, its certificate's CN.
	Name string
	// Streams are the JetStream streams it owns: it declares them, reads
	// and consumes them, and deletes and purges their messages. What it
	// publishes into them is among Core (a stream stores its subjects).
	Streams []string
	// Buckets are the key-value buckets it owns: it declares them, writes,
	// reads and watches their keys.
	Buckets []string
	// Reads are key-value buckets of another service it may only read:
	// get a key and watch the bucket.
	Reads []string
	// Core are the core NATS subjects (wildcards allowed) it publishes and
	// subscribes to, besides JetStream's.
	Core []string
	// Sends are subjects it may only publish to: its own subject of the
	// audit trail (kit/suite/audit), so no service can record as another.
	Sends []string
}

// Users is every NATS user of the suite (the gateway and hosts never
// connect). The mailbox owns its partitions SB_MBOX_0..3 (records on
// sb.rec.<k>.<client>.<id>), the presence and idempotency buckets, and its
// replicas' subjects (sb.host.*, sb.mbx.*, sb.find, sb.held.*, the watch);
// the registry owns the audit stream, to which each service sends on its
// own subject. docs/security.md, "NATS", has the table.
var Users = []User{
	{Name: "registry", Buckets: []string{"sb_registry"}, Reads: []string{"sb_presence"},
		Streams: []string{"SB_AUDIT"}, Sends: []string{"sb.audit.registry"}},
	{Name: "mailbox",
		Streams: []string{"SB_MBOX_0", "SB_MBOX_1", "SB_MBOX_2", "SB_MBOX_3"},
		Buckets: []string{"sb_presence", "sb_idempotency"},
		Core:    []string{"sb.rec.>", "sb.host.*", "sb.mbx.*", "sb.find", "sb.held.*", "switchboard.mailbox.watch"},
		Sends:   []string{"sb.audit.mailbox"}},
	{Name: "bridge", Buckets: []string{"sb_mounts", "sb_mount_leases"}, Sends: []string{"sb.audit.bridge"}},
	// The NATS node's own leaf: its container's health check asks
	// JetStream whether it serves ($JS.API.INFO, which every user may),
	// and nothing else.
	{Name: Node},
}

// Node is the name of the NATS servers' own certificate (CN=nats,
// OU=service): the identity the nodes of a cluster present to each other
// on their routes.
const Node = "nats"
