package listen

import (
	"strings"
	"testing"
)

func TestDevModeRefusesNonLoopback(t *testing.T) {
	t.Parallel()
	tests := []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1:0", true},
		{"[::1]:0", true},
		{"localhost:0", true},
		{"0.0.0.0:0", false},
		{":0", false},
		{"[::]:0", false},
		{"10.1.2.3:0", false},
		{"example.com:0", false},
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			err := CheckLoopback(tt.addr)
			if tt.ok != (err == nil) {
				t.Fatalf("CheckLoopback(%q) = %v, want ok=%v", tt.addr, err, tt.ok)
			}
			if err != nil && !strings.Contains(err.Error(), "loopback only") {
				t.Fatalf("the refusal should say why: %v", err)
			}
		})
	}
	if _, err := TCP("0.0.0.0:0", true); err == nil {
		t.Fatal("dev mode bound 0.0.0.0")
	}
	lis, err := TCP("0.0.0.0:0", false)
	if err != nil {
		t.Fatalf("production mode may bind every address: %v", err)
	}
	lis.Close()
}

func TestIsLoopbackHostNamesOnlyThisMachine(t *testing.T) {
	t.Parallel()
	for host, want := range map[string]bool{
		"localhost": true, "127.0.0.1": true, "127.9.9.9": true, "::1": true,
		"dev.localhost": false, // the resolver decides, not the name
		"10.0.0.1":      false, "::": false, "0.0.0.0": false, "example.com": false, "": false,
	} {
		if got := IsLoopbackHost(host); got != want {
			t.Errorf("IsLoopbackHost(%q) = %v, want %v", host, got, want)
		}
	}
}
