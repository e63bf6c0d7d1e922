// Package listen opens the suite's listeners, refusing in dev mode to bind
// anything but loopback: dev mode trusts a name in a header, which is only
// safe when nobody else can reach the port.
package listen

import (
	"fmt"
	"net"
	"net/netip"
)

// TCP listens on addr. With dev set, addr must name a loopback host
// ("127.0.0.1:7737", "[::1]:0", "localhost:8080").
func TCP(addr string, dev bool) (net.Listener, error) {
	if dev {
		if err := CheckLoopback(addr); err != nil {
			return nil, err
		}
	}
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", addr, err)
	}
	return lis, nil
}

// CheckLoopback refuses an address whose host is not loopback.
func CheckLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.IsLoopback() {
		return fmt.Errorf("dev mode refuses to listen on %q: it takes identities from a header, so it binds loopback only (127.0.0.1 or ::1); use mutual TLS to serve other machines", addr)
	}
	return nil
}

// IsLoopbackHost reports whether host (a name or an IP, without port or
// brackets) is this machine: "localhost" or a loopback IP. Other names
// ending in .localhost are left out: whether they resolve to loopback is
// up to the resolver, not to the name.
func IsLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
