package remote

import (
	"strings"
	"testing"
)

func TestDialRefusesAMalformedServiceAddress(t *testing.T) {
	t.Parallel()
	f := &Flags{Addr: "127.0.0.1:7737", Mailbox: "%zz", Identity: "me"}
	c, err := f.Dial()
	if err == nil {
		c.Close()
		t.Fatal("Dial took a malformed --mailbox address")
	}
	if !strings.Contains(err.Error(), "%zz") {
		t.Errorf("the error %q does not name the address", err)
	}
}

func TestAServiceWithoutItsOwnAddressIsAtAddr(t *testing.T) {
	t.Parallel()
	f := &Flags{Addr: "127.0.0.1:7737", Bridge: "127.0.0.1:7733", Identity: "me"}
	c, err := f.Dial()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Registry() != c.ClientConn || c.Mailbox() != c.ClientConn {
		t.Error("the registry and mailbox are not reached at --addr")
	}
	if c.Bridge() == c.ClientConn || c.Bridge() == nil {
		t.Error("the bridge is not reached at its own address")
	}
}
