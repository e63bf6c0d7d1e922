package grpcclient

import (
	"fmt"
	"net"
	"strings"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
)

// maxReplicas bounds the addresses one target may list.
const maxReplicas = 64

// lists numbers the resolver schemes of list targets: each ClientConn gets
// a manual resolver of its own, and grpc-go keys resolvers by scheme.
var lists atomic.Uint64

// replicas turns a comma-separated list of "host:port" into a target
// served by a static resolver of its own (grpc-go's manual resolver, given
// the list once), and the dial option that installs it. Any other target is
// returned as it is, with no option.
func replicas(target string) (string, grpc.DialOption, error) {
	if !strings.Contains(target, ",") || strings.Contains(target, "://") {
		return target, nil, nil
	}
	parts := strings.Split(target, ",")
	if len(parts) > maxReplicas {
		return "", nil, fmt.Errorf("the address list %q names %d addresses; at most %d are taken", target, len(parts), maxReplicas)
	}
	seen := map[string]bool{}
	addrs := make([]string, 0, len(parts))
	var state resolver.State
	for _, p := range parts {
		addr := strings.TrimSpace(p)
		host, port, err := net.SplitHostPort(addr)
		if err != nil || host == "" || port == "" {
			return "", nil, fmt.Errorf("the address list %q holds %q, which is not host:port", target, addr)
		}
		if seen[addr] {
			return "", nil, fmt.Errorf("the address list %q names %q twice", target, addr)
		}
		seen[addr] = true
		addrs = append(addrs, addr)
		// ServerName makes each replica's own name the authority its
		// certificate is checked against, as a dial of it alone would.
		state.Endpoints = append(state.Endpoints, resolver.Endpoint{Addresses: []resolver.Address{{Addr: addr, ServerName: addr}}})
	}
	r := manual.NewBuilderWithScheme(fmt.Sprintf("switchboard-replicas-%d", lists.Add(1)))
	r.InitialState(state)
	return r.Scheme() + ":///" + strings.Join(addrs, ","), grpc.WithResolvers(r), nil
}
