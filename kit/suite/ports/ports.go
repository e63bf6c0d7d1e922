// Package ports holds the suite's well-known ports and the loopback
// addresses built on them: every default listen address and peer address
// of a service, the CLI and `switchboard dev` comes from here.
package ports

// The ports. Each service alone listens on its own; `switchboard dev` serves
// every gRPC service on Suite and the gateway on Gateway.
const (
	Registry = "7731"
	Mailbox  = "7732"
	Bridge   = "7733"
	// Gateway is the HTTP(S) gateway's port, alone or in the embedded suite.
	Gateway = "8080"
	// Suite is the embedded suite's one gRPC port (`switchboard dev`), which
	// the CLI and a tool host dial by default.
	Suite = "7737"
	// Metrics is the port every container of docker-compose.yml serves
	// /metrics on (--metrics-addr) and Prometheus scrapes; nothing listens
	// on it unless told to.
	Metrics = "9090"
)

// Loopback is the host of every default address: nothing listens beyond
// this machine unless told to.
const Loopback = "127.0.0.1"

// The default addresses: loopback on each port.
const (
	RegistryAddr = Loopback + ":" + Registry
	MailboxAddr  = Loopback + ":" + Mailbox
	BridgeAddr   = Loopback + ":" + Bridge
	GatewayAddr  = Loopback + ":" + Gateway
	SuiteAddr    = Loopback + ":" + Suite
)
