package process

import (
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/switchboard-run/switchboard/kit/suite/certs"
)

func TestDevModeListensOnLoopbackOnlyAndDialsPlaintext(t *testing.T) {
	t.Parallel()
	var cfg service
	p, err := Start("x", &cfg, []string{"--dev"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Listen("0.0.0.0:0"); err == nil || !strings.Contains(err.Error(), "dev mode refuses") {
		t.Fatalf("dev mode on every interface: %v", err)
	}
	lis, err := p.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lis.Close()
	if c, err := p.ClientTLS(); c != nil || err != nil {
		t.Fatalf("ClientTLS in dev mode = %v, %v", c, err)
	}
	if _, err := p.GRPCServer(nil); err != nil {
		t.Fatal(err)
	}
}

func TestProductionLoadsItsTLSFromTheNamedFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca, err := certs.MintCA("ca", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := ca.Write(dir); err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Mint(certs.LeafSpec{Name: "x", Grade: "service", Hosts: []string{"127.0.0.1"}, Validity: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if err := leaf.Write(dir, "x"); err != nil {
		t.Fatal(err)
	}
	tlsArgs := []string{"--tls-ca", filepath.Join(dir, "ca.pem"), "--tls-cert", filepath.Join(dir, "x.pem"), "--tls-key", filepath.Join(dir, "x-key.pem")}

	var cfg service
	p, err := Start("x", &cfg, tlsArgs, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	first, err := p.ClientTLS()
	if err != nil || first == nil {
		t.Fatalf("ClientTLS = %v, %v", first, err)
	}
	if again, _ := p.ClientTLS(); again != first {
		t.Fatal("the client TLS was loaded again for a second dial")
	}
	if _, err := p.GRPCServer(nil); err != nil {
		t.Fatal(err)
	}

	var broken service
	p, err = Start("x", &broken, append(tlsArgs[:4:4], "--tls-key", filepath.Join(dir, "missing.pem")), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Dial("127.0.0.1:1"); err == nil || !strings.Contains(err.Error(), "the x's TLS") {
		t.Fatalf("a missing key: %v, want it named as the process's TLS", err)
	}
	if _, err := p.GRPCServer(nil); err == nil || !strings.Contains(err.Error(), "missing.pem") {
		t.Fatalf("a missing key: %v, want the file named", err)
	}
}
